"""The shipped YAML parsed at build time (denpex.snapshot, written by hatch_build.py): the rule book and
the entry-point presets come from it while their files are as they were built, else from the YAML,
to the same objects; a start that uses it imports neither PyYAML nor regex.

The end-to-end cases run `python` on a copy of the source tree, the way an install meets it: the
snapshot built by `python -m denpex.snapshot_build` (what hatch_build.py runs), then a rule file or a
rulebook module changed after the build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from denpex import snapshot, snapshot_build
from denpex.rulebook.loader import builtin_rules_dir, load_rule_file, rule_files
from denpex.source.capture import entrypoints

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "_snapshot.pickle"
    assert snapshot_build.build(out) > 1
    monkeypatch.setattr(snapshot, "SNAPSHOT", out)
    monkeypatch.setattr(snapshot, "_entries", None)
    return out


def test_the_snapshot_holds_what_the_yaml_parses_to(built: Path) -> None:
    rules_dir = builtin_rules_dir()
    files = rule_files(rules_dir)
    from_snapshot = snapshot.rulebook(rules_dir, files)
    assert from_snapshot is not None
    assert from_snapshot == tuple(load_rule_file(p, validate=False) for p in files)
    presets = sorted(snapshot.PRESETS.glob("*.yaml"))
    assert presets
    for p in presets:
        data = snapshot.yaml_data(p)
        assert data is not None and data == yaml.safe_load(p.read_text(encoding="utf-8")), p


def test_a_copy_of_the_rules_elsewhere_is_still_current_and_an_edit_is_not(built: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(builtin_rules_dir(), rules)
    files = rule_files(rules)
    moved = snapshot.rulebook(rules, files)
    assert moved is not None
    assert moved == tuple(load_rule_file(p, validate=False) for p in files)  # paths of the copy
    edited = files[len(files) // 2]
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited after the build\n", encoding="utf-8")
    assert snapshot.rulebook(rules, files) is None
    (rules / "extra.yaml").write_text((rules / files[0].relative_to(rules)).read_text(encoding="utf-8"))
    edited.write_text(edited.read_text(encoding="utf-8").replace("\n# edited after the build\n", ""))
    assert snapshot.rulebook(rules, rule_files(rules)) is None  # a rule file more


def test_a_preset_outside_the_package_or_edited_is_parsed(built: Path, tmp_path: Path) -> None:
    src = sorted(snapshot.PRESETS.glob("*.yaml"))[0]
    copy = tmp_path / src.name
    shutil.copy(src, copy)
    assert snapshot.yaml_data(copy) is None


def _tree(tmp: Path) -> tuple[Path, dict[str, str]]:
    tree = tmp / "tree"
    shutil.copytree(ROOT / "server", tree / "server", ignore=shutil.ignore_patterns("__pycache__", "_snapshot.pickle"))
    shutil.copytree(ROOT / "rules", tree / "rules")
    env = {**os.environ, "PYTHONPATH": str(tree / "server"), "DENPEX_CACHE_DIR": ""}
    subprocess.run([sys.executable, "-m", "denpex.snapshot_build"], env=env, cwd=tree, check=True, capture_output=True)
    assert (tree / "server" / "denpex" / "_snapshot.pickle").is_file()
    return tree, env


START = """
import json, sys
from denpex import snapshot
from denpex.rulebook import load_rulebook
from denpex.rulebook.loader import builtin_rules_dir, rule_files
from denpex.source.capture import entrypoints
assert snapshot.__file__.startswith(sys.argv[1]), snapshot.__file__
book = load_rulebook()
presets = entrypoints.presets()
d = builtin_rules_dir()
print(json.dumps({
    "from_snapshot": snapshot.rulebook(d, rule_files(d)) is not None,
    "title": book.get("capture-item-sync").title,
    "paths": sorted(r.path for r in book.rules)[:3],
    "presets": [p.framework for p in presets],
    "imported": sorted(m for m in ("yaml", "regex", "fastjsonschema") if m in sys.modules),
}))
"""


def _start(tree: Path, env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", START, str(tree)], env=env, cwd=tree, check=True,
                         capture_output=True, text=True)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_a_start_from_the_snapshot_parses_no_yaml(tmp_path: Path) -> None:
    tree, env = _tree(tmp_path)
    r = _start(tree, env)
    assert r["from_snapshot"] is True
    assert r["imported"] == []  # neither PyYAML nor regex nor the schema validator
    assert isinstance(r["paths"], list) and r["paths"]
    assert all(str(p).startswith(str(tree / "rules")) for p in r["paths"])  # this install's files
    assert r["presets"] == [p.framework for p in entrypoints.presets()]


def test_a_rule_edited_after_the_build_is_parsed_from_its_file(tmp_path: Path) -> None:
    tree, env = _tree(tmp_path)
    rule = next((tree / "rules").rglob("capture-item-sync.yaml"))
    text = rule.read_text(encoding="utf-8")
    edited = re.sub(r"^title: .*$", "title: Edited after the build", text, count=1, flags=re.M)
    assert edited != text
    rule.write_text(edited, encoding="utf-8")
    r = _start(tree, env)
    assert r["from_snapshot"] is False
    assert r["title"] == "Edited after the build"
    assert isinstance(r["imported"], list) and "yaml" in r["imported"]


def test_a_rulebook_module_changed_after_the_build_is_not_trusted(tmp_path: Path) -> None:
    tree, env = _tree(tmp_path)
    model = tree / "server" / "denpex" / "rulebook" / "model.py"
    model.write_text(model.read_text(encoding="utf-8") + "\n# a change after the build\n", encoding="utf-8")
    r = _start(tree, env)
    assert r["from_snapshot"] is False
    assert r["title"] == _start_title()


def _start_title() -> str:
    from denpex.rulebook import load_rulebook

    rule = load_rulebook().get("capture-item-sync")
    assert rule is not None
    return str(rule.title)
