"""Score `denpex diagnose` on a folder of real logs against its gold table (issue 22, "Must show").

    python bench/score_fresh_logs.py                              # tests/data/fresh40
    python bench/score_fresh_logs.py tests/data/first_error --json /tmp/score.json   # its table: no `initiating`

The folder holds the logs and a ``gold.tsv`` with the columns ``file``, ``url``, ``line`` (the 1-based
line a person names as what failed first, empty where it is not in the log), ``rank`` (empty: no
rank expected), ``initiating`` (``present`` or ``absent``), optionally ``set`` (``held-out``, or ``tuned``
for a log a rule was written from after the first score) and ``why``. Each log is diagnosed by the
CLI as a user runs it (``python -m denpex diagnose FILE --format json``, one process per log).

What counts as the answer: the verdict's line and rank, unless the verdict is missing or of low
confidence and the first-error pass found a line, which is then the answer (the README's "When no
rule knows the failure"). Per log it prints the gold, the answer and whether they agree; then

- first-line accuracy: answers whose line is the gold line, over logs whose initiating line is present;
- rank accuracy: answers whose rank is the gold rank, over present logs whose gold names a rank;
- no-confident-verdict rate: logs whose gold says ``absent`` and whose verdict is not of high
  confidence (a high one there names collateral as the cause: a wrong confident verdict), over those
  logs; how many of them also say "the initiating error is not in this log", and how many still name a line
  (a medium verdict or a first-error answer: not confident, but not "not here" either), is shown beside it;
- the same three over the held-out logs alone, where the gold marks some as tuned.

Exit 0 always (it is a measurement, not a gate; tests/logs/test_fresh40.py is the gate).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT = REPO / "tests" / "data" / "fresh40"
NOT_HERE = "the initiating error is not in this log"


@dataclass
class Gold:
    file: str
    url: str
    line: int | None  # None: the initiating line is not in the log
    rank: int | None
    why: str
    held_out: bool = True  # False: a rule was written from this log after the first score


@dataclass
class Answer:
    line: int | None
    rank: int | None
    by: str  # "rule <id>", "first-error <kind>", "not in this log" or "nothing"
    confidence: str | None  # the verdict's confidence (None: no verdict)
    not_here: bool  # the first-error answer says the initiating error is not in this log


@dataclass
class Judged:
    gold: Gold
    answer: Answer
    line_ok: bool | None  # None: the gold has no line (absent)
    rank_ok: bool | None  # None: the gold names no rank
    confident_wrong: bool  # absent logs: a high-confidence verdict


def read_gold(folder: Path) -> list[Gold]:
    with open(folder / "gold.tsv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    out = []
    for r in rows:
        # tests/data/first_error's table has no `initiating` column (an empty line there is absent) and says `note`
        absent = r.get("initiating", "absent" if not r["line"] else "present") == "absent"
        if absent == bool(r["line"]):  # a present log needs its line, an absent one has none
            raise ValueError(f"{r['file']}: initiating={r['initiating']} but line={r['line']!r}")
        out.append(Gold(r["file"], r["url"], int(r["line"]) if r["line"] else None,
                        int(r["rank"]) if r["rank"] else None, r.get("why", r.get("note", "")),
                        r.get("set", "held-out") != "tuned"))
    return out


def answer_of(doc: dict[str, Any]) -> Answer:
    """The line and rank a user is given as what failed first, from a `--format json` document."""
    v = doc.get("verdict")
    fe = doc.get("first_error")
    not_here = fe is not None and fe.get("found") is False and fe.get("what") == NOT_HERE
    conf = v["confidence"] if v else None
    # a low verdict is collateral the rules saw; a first error line found after it is the answer
    if fe is not None and fe.get("found") and (v is None or conf == "low"):
        return Answer(fe["line"], fe.get("rank"), f"first-error {fe.get('kind')}", conf, False)
    if v is not None:
        return Answer(v["line"], v.get("rank"), f"rule {v['rule']}", conf, not_here)
    return Answer(None, None, "not in this log" if not_here else "nothing", None, not_here)


def judge(gold: Gold, doc: dict[str, Any]) -> Judged:
    a = answer_of(doc)
    if gold.line is None:
        return Judged(gold, a, None, None, a.confidence == "high")
    rank_ok = None if gold.rank is None else a.rank == gold.rank
    return Judged(gold, a, a.line == gold.line, rank_ok, False)


def diagnose(path: Path) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(path), "--format", "json"],
                       capture_output=True, timeout=300, check=False)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{path}: exit {r.returncode}: {r.stderr.decode(errors='replace')[-400:]}")
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def summary(judged: list[Judged]) -> dict[str, Any]:
    present = [j for j in judged if j.gold.line is not None]
    absent = [j for j in judged if j.gold.line is None]
    ranked = [j for j in present if j.gold.rank is not None]
    lines_ok = sum(1 for j in present if j.line_ok)
    ranks_ok = sum(1 for j in ranked if j.rank_ok)
    no_conf = sum(1 for j in absent if not j.confident_wrong)
    said = sum(1 for j in absent if j.answer.not_here)
    # a medium verdict, or a line from the first-error pass: not confident, but not "not here" either
    named = sum(1 for j in absent if j.answer.by.startswith("first-error")
                or (j.answer.line is not None and j.answer.confidence == "medium"))

    def pct(a: int, b: int) -> float | None:
        return round(100 * a / b, 1) if b else None

    return {"logs": len(judged), "present": len(present), "absent": len(absent),
            "first_line_ok": lines_ok, "first_line_accuracy_pct": pct(lines_ok, len(present)),
            "ranked": len(ranked), "rank_ok": ranks_ok, "rank_accuracy_pct": pct(ranks_ok, len(ranked)),
            "no_confident_verdict": no_conf, "no_confident_verdict_pct": pct(no_conf, len(absent)),
            "said_not_in_this_log": said, "absent_named_a_line": named}


def line_of(s: dict[str, Any], what: str) -> str:
    return (f"{s['logs']} {what}: first line {s['first_line_ok']}/{s['present']} ({s['first_line_accuracy_pct']}%), "
            f"rank {s['rank_ok']}/{s['ranked']} ({s['rank_accuracy_pct']}%), no confident verdict where the "
            f"initiating line is absent {s['no_confident_verdict']}/{s['absent']} ({s['no_confident_verdict_pct']}%; "
            f"{s['said_not_in_this_log']} of them say '{NOT_HERE}', {s['absent_named_a_line']} still name a line "
            f"at medium confidence or by the first-error pass)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--jobs", type=int, default=2, help="CLI processes at once (default 2)")
    ap.add_argument("--json", type=Path, help="also write per-log results and the summary here")
    args = ap.parse_args(argv)
    golds = read_gold(args.folder)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        docs = list(pool.map(lambda g: diagnose(args.folder / g.file), golds))
    judged = [judge(g, d) for g, d in zip(golds, docs, strict=True)]
    for j in judged:
        a, g = j.answer, j.gold
        if g.line is None:
            mark = "WRONG-CONFIDENT" if j.confident_wrong else "ok"
            want = "absent"
        else:
            mark = "ok" if j.line_ok and j.rank_ok is not False else "MISS"
            want = f"line {g.line}" + (f" rank {g.rank}" if g.rank is not None else "")
        got = f"line {a.line} rank {a.rank}" if a.line is not None else "-"
        print(f"{mark:15} {g.file:55} gold {want:16} got {got:20} {a.by} ({a.confidence or 'no verdict'})")
    s = summary(judged)
    print()
    print(line_of(s, "logs"))
    held = [j for j in judged if j.gold.held_out]
    h = summary(held) if len(held) < len(judged) else None
    if h is not None:
        print(line_of(h, "held-out logs"))
    if args.json:
        args.json.write_text(json.dumps({"summary": s, "held_out": h, "logs": [asdict(j) for j in judged]},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
