"""Framework presets (server/denpex/source/capture/presets/*.yaml, engine in entrypoints.py): code a framework captures
with no capture site in the user's files. For each framework, a user workspace in its idioms
(tests/data/reach/presets/<framework>/) has every `# ruleid:` line flagged by its rule at warning level (capture
depends on the user's flags) with a message naming the framework path, and no `# ok:` line flagged; its twin
without the framework's imports (<framework>_noimport/) gets nothing. Also: the schema is checked at load, and
`[tool.denpex] capture-entry-points` turns a function of the project into a capture entry point."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from denpex.errors import DenpexError
from denpex.source.capture.entrypoints import load_preset, presets
from tests.source.reach_score import REACH, annotations_in, describe, scan, score

PRESET_DATA = REACH / "presets"
FRAMEWORKS = sorted(d.name for d in PRESET_DATA.iterdir() if d.is_dir() and not d.name.endswith("_noimport"))


def test_every_framework_of_the_issue_has_a_preset_and_ground_truth() -> None:
    names = {p.framework for p in presets()}
    assert {"vLLM", "SGLang", "Megatron-LM", "TensorRT-LLM", "TransformerEngine"} <= names
    assert set(FRAMEWORKS) >= {"vllm", "sglang", "megatron", "tensorrt_llm", "transformer_engine"}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_preset_workspace(framework: str) -> None:
    root = PRESET_DATA / framework
    findings = scan(root)
    s = score(framework, annotations_in(root), findings)
    assert s.hazards, "the workspace annotates no hazard"
    assert not s.missed, "missed: " + "; ".join(f"{p}:{ln} {r}" for p, ln, r in sorted(s.missed))
    assert not s.false_positives, "false: " + "; ".join(describe(f) for f in s.false_positives)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_twin_without_the_framework_gets_nothing(framework: str) -> None:
    twin = PRESET_DATA / f"{framework}_noimport"
    assert twin.is_dir()
    assert scan(twin) == []


def test_preset_findings_name_the_framework_and_are_warnings() -> None:
    root = PRESET_DATA / "vllm"
    r = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--format", "json"], cwd=root,
                       capture_output=True, text=True, timeout=300)
    diags = json.loads(r.stdout)["diagnostics"]
    entry = [d for d in diags if "captured by vLLM:" in d["message"]]
    assert entry and all(d["severity"] == "warning" for d in entry)
    assert all("enforce" in d["message"] for d in entry)  # the flag that turns capture off


def test_a_malformed_preset_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("framework: X\ndetect: [x]\nentry_points:\n  - methods: [forward]\n    typo: 1\n")
    with pytest.raises(DenpexError, match="unknown key"):
        load_preset(bad)
    bad.write_text("framework: X\ndetect: [x]\nentry_points:\n  - methods: [forward]\n")
    with pytest.raises(DenpexError, match="needs one of"):
        load_preset(bad)


def test_configured_capture_entry_point(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "engine.py").write_text(textwrap.dedent("""\
        import torch


        class Engine:
            def decode(self, x):
                return x / x.max().item()

            def load(self, x):
                return x.max().item()
        """))
    (tmp_path / "pyproject.toml").write_text('[tool.denpex]\ncapture-entry-points = ["pkg.engine:Engine.decode"]\n')
    r = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--format", "json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    diags = json.loads(r.stdout)["diagnostics"]
    assert [(d["path"], d["line"], d["rule"], d["severity"]) for d in diags] == [
        ("pkg/engine.py", 6, "capture-item-sync", "error")]
    (tmp_path / "pyproject.toml").write_text("")
    r = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--format", "json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert json.loads(r.stdout)["diagnostics"] == []
