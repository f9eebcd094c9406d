"""compare mode's explanation: the source analyser's findings inside a callable's lines."""

from __future__ import annotations

from pathlib import Path

from denpex.guard.explain import findings_in

CASES = Path(__file__).resolve().parent.parent / "gpu" / "cases"


def test_names_the_static_finding_inside_the_range() -> None:
    case = CASES / "replay-frozen-python-scalar.py"
    line = next(i for i, t in enumerate(case.read_text().splitlines(), 1) if t.startswith("scale = 3.0"))
    assert findings_in(str(case), 1, line) == f"replay-frozen-python-scalar at {case.resolve()}:{line}"


def test_nothing_outside_it() -> None:
    case = CASES / "replay-frozen-python-scalar.py"
    assert findings_in(str(case), 1, 5) == ""
