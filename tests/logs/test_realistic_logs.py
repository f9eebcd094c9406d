"""`denpex diagnose` on the real H200 logs of the realistic programs (tests/data/realistic/README.md).

Each log's gold row says what the diagnosis must name:
- LINE: a verdict on the gold log line, whose text holds one of the gold substrings, on the gold rank
  (two-GPU logs);
- SILENT: a wrong number and no error signature (the program's own eager check failed): no high-confidence
  verdict, and the answer (verdict or first-error line) is the program's own check line;
- ABSENT: a straggler with no initiating line: no high-confidence verdict, and the verdict names the rank;
- CLEAN: no verdict and no first-error answer.

`results/logs/` come with gold.tsv (line numbers in gold_lines.tsv), `results_new/logs/` with gold_new.tsv.
What the diagnosis gets wrong today is a strict xfail with the reason.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "realistic"
# programs of gold.tsv whose failure is a wrong number, not a log line (as in score.py)
SILENT_OLD = {"s04_evalgraph", "s05_lrsched", "s06_compile_scoring"}


@dataclass(frozen=True)
class LogCase:
    path: Path
    expect: str  # LINE | SILENT | ABSENT | CLEAN
    substrings: tuple[str, ...]
    line: int | None
    rank: int | None

    @property
    def name(self) -> str:
        return self.path.stem


def _rows(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _int(s: str) -> int | None:
    return int(s) if s.strip() else None


def log_cases() -> list[LogCase]:
    lines = {r["program"]: r["line"] for r in _rows("gold_lines.tsv") if r["kind"] == "log"}
    out = []
    for r in _rows("gold.tsv"):
        if r["kind"] != "log":
            continue
        path = DATA / r["program"]
        expect = "SILENT" if path.stem in SILENT_OLD else r["expect"]
        out.append(LogCase(path, expect, tuple(s for s in r["substrings"].split("||") if s),
                           _int(lines[path.stem]), _int(r["rank"])))
    for r in _rows("gold_new.tsv"):
        if r["kind"] != "log":
            continue
        out.append(LogCase(DATA / r["program"], r["expect"], tuple(s for s in r["substrings"].split("||") if s),
                           _int(r["line"]), _int(r["rank"])))
    return out


CASES = log_cases()

# What the diagnosis at HEAD gets wrong, per log.
WRONG: dict[str, str] = {}


@cache
def diagnose(path: Path) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(path), "--format", "json"],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    doc: dict[str, object] = json.loads(r.stdout)
    return doc


def _part(doc: dict[str, object], key: str) -> dict[str, object] | None:
    v = doc.get(key)
    return v if isinstance(v, dict) else None


def test_every_log_has_a_gold_row() -> None:
    named = sorted(c.path.relative_to(DATA).as_posix() for c in CASES)
    on_disk = sorted(p.relative_to(DATA).as_posix() for d in ("results/logs", "results_new/logs")
                     for p in (DATA / d).glob("*.log"))
    assert named == on_disk
    for c in CASES:
        assert c.expect in ("LINE", "SILENT", "ABSENT", "CLEAN"), c
        assert (c.line is not None) == (c.expect in ("LINE", "SILENT")), c


def test_gold_lines_hold_the_gold_text() -> None:
    for c in CASES:
        if c.line is None:
            continue
        # bytes: text mode would turn the progress bars' \r into line breaks and shift the numbering
        text = c.path.read_bytes().decode(errors="replace").split("\n")[c.line - 1]
        assert not c.substrings or any(s in text for s in c.substrings), (c.name, c.line, text[:200])


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=pytest.mark.xfail(strict=True, reason=WRONG[c.name]))
                                  if c.name in WRONG else pytest.param(c, id=c.name) for c in CASES])
def test_diagnosis_names_the_gold_line_and_rank(case: LogCase) -> None:
    doc = diagnose(case.path)
    v = _part(doc, "verdict")
    fe = _part(doc, "first_error")
    seen = {k: (v or {}).get(k) for k in ("rule", "line", "rank", "confidence")}
    if case.expect == "LINE":
        assert v is not None, fe
        assert v.get("line") == case.line, seen
        assert any(s in str(v.get("text") or "") for s in case.substrings), v.get("text")
        if case.rank is not None:
            assert v.get("rank") == case.rank, seen
    elif case.expect == "SILENT":
        assert v is None or v.get("confidence") != "high", seen
        answer = v if v is not None else fe
        assert answer is not None and answer.get("line") == case.line, (seen, fe)
    elif case.expect == "ABSENT":
        assert v is not None and v.get("confidence") != "high", seen
        assert case.rank is not None and v.get("rank") == case.rank, seen
    else:
        assert v is None, seen
        assert fe is None or not fe.get("found"), fe
