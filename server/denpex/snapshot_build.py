"""Writing denpex.snapshot's file: the shipped YAML parsed by the same code a start runs.

    python -m denpex.snapshot_build [OUT]     # hatch_build.py runs this at build time

Needs PyYAML, regex and fastjsonschema (build-system requires in pyproject.toml).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from denpex.snapshot import FORMAT, PACKAGE, PRESETS, SNAPSHOT, digest, rulebook_digest


def build(out: Path) -> int:
    """Parse the shipped YAML as a start would and write the snapshot to `out`."""
    import pickle

    import yaml

    from denpex.rulebook.loader import builtin_rules_dir, load_rule_file, rule_files

    rules_dir = builtin_rules_dir()
    files = rule_files(rules_dir)
    # as loader._builtin_rules parses them (validated by the test suite, tests/logs/test_rulebook.py)
    rules = [(f.relative_to(rules_dir).as_posix(), load_rule_file(f, validate=False)) for f in files]
    # the rules pickled apart: a start unpickles them only once their digest is found current
    entries: dict[str, tuple[str, Any]] = {
        "rulebook": (rulebook_digest(rules_dir, files), pickle.dumps(rules, protocol=pickle.HIGHEST_PROTOCOL))}
    for p in sorted(PRESETS.glob("*.yaml")):
        # as source/capture/entrypoints.load_preset parses them
        entries[f"yaml:{p.relative_to(PACKAGE).as_posix()}"] = (
            digest([p], PACKAGE), yaml.safe_load(p.read_text(encoding="utf-8")))
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as fh:
        pickle.dump({"format": FORMAT, "entries": entries}, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(out)
    return len(entries)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SNAPSHOT
    n = build(target)
    print(f"{target}: {n} entries")
