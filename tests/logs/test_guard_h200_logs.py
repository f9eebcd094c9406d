"""`denpex diagnose` of real guarded runs (H200, torch 2.11, tests/gpu/guard_loop.py on 2026-12-01): the verdict
is the rule the guard named, on the guard's line, and the freed-input refusal keeps its allocation, capture
and free lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

LOGS = Path(__file__).resolve().parent.parent / "data" / "guard_h200"

CASES = {
    "refuse--freed-empty-cache.log": "replay-freed-input",
    "realistic.eval_classifier.log": "replay-rebound-static-input",
    "realistic.train_ngram_lm.log": "replay-frozen-python-scalar",
    "replay-output-kept-without-clone--list.log": "replay-output-kept-without-clone",
    "replay-python-side-effects.log": "replay-python-side-effects",
    "replay-frozen-python-scalar--branch.log": "replay-frozen-python-scalar",  # the guard before aff1530
    "replay-frozen-branch--branch.log": "replay-frozen-branch",  # the same case, 2026-12-02
}


def _diagnose(path: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(path), "--format", "json"],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 1, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("name", sorted(CASES))
def test_verdict_is_the_guard_rule_on_its_line(name: str) -> None:
    doc = _diagnose(LOGS / name)
    verdict = doc["verdict"]
    assert verdict["rule"] == CASES[name]
    # read as bytes: text mode would turn tqdm's \r updates into lines of their own
    lines = (LOGS / name).read_bytes().decode("utf-8", "replace").split("\n")
    first = next(i for i, text in enumerate(lines, 1) if f"denpex-guard: {CASES[name]} (" in text)
    assert verdict["line"] == first


def test_refusal_names_allocation_capture_and_free_lines() -> None:
    text = (LOGS / "refuse--freed-empty-cache.log").read_text()
    line = next(t for t in text.splitlines() if t.startswith("denpex.guard.GuardError:"))
    for part in ("allocated at ", "refuse--freed-empty-cache.py:6", "captured at ", ".py:9", "freed at ",
                 ".py:10"):
        assert part in line
    assert "illegal memory access" not in text
