"""Reach benchmark (issue 11): recall and false positives of `denpex scan` on annotated capture hazards, against a
plain grep run over the same files in the same run.

    python bench/bench_reach.py [--tree DIR --truth FILE]... [--trees-only] [--json OUT]

Without --tree it scores every workspace of tests/data/reach (cases/ and programs/) against its `# ruleid:` /
`# ok:` annotations. Each --tree DIR (a real project checkout) is paired with the --truth FILE at the same position:
a TSV with a header naming at least the columns `path`, `line`, `rule` and `verdict` (`hazard` or `ok`; other
columns such as repo and commit are ignored), paths relative to DIR, lines 1-based. On a real tree, findings on
lines the truth file does not list are counted as unreviewed, not as false.

The peer is `rg -n '\\.item\\(\\)|\\.cpu\\(\\)|torch\\.cuda\\.synchronize\\(\\)'` over the same .py files: how many
annotated hazards (of any rule) it hits on their line, and how many of its hits are not hazards.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.source.reach_score import (  # noqa: E402 (the scorer lives with the tests it serves)
    Finding,
    Key,
    LineNotes,
    annotations_in,
    python_files,
    scan,
    score,
    workspaces,
)

GREP_PATTERN = r"\.item\(\)|\.cpu\(\)|torch\.cuda\.synchronize\(\)"


@dataclass
class Row:
    name: str
    files: int
    hazards: int
    found: int
    false_pos: int
    wrong_rule: int
    unreviewed: int
    grep_found: int
    grep_hits: int
    grep_not_hazard: int
    grep_unreviewed: int
    scan_s: float
    grep_s: float


def grep(root: Path) -> tuple[set[Key], float]:
    """Lines the peer grep hits in the .py files of root (relative paths, 1-based lines), and its wall time."""
    files = [p.relative_to(root).as_posix() for p in python_files(root)]
    if not files:
        return set(), 0.0
    t = time.perf_counter()
    r = subprocess.run(["rg", "-n", "--no-heading", "--with-filename", GREP_PATTERN, "--", *files], cwd=root,
                       capture_output=True, text=True, timeout=600, check=False)
    dt = time.perf_counter() - t
    if r.returncode not in (0, 1):
        raise RuntimeError(f"rg failed in {root}: {r.stderr.strip()}")
    hits: set[Key] = set()
    for line in r.stdout.splitlines():
        path, num, _ = line.split(":", 2)
        hits.add((path, int(num)))
    return hits, dt


def timed_scan(root: Path) -> tuple[list[Finding], float]:
    t = time.perf_counter()
    found = scan(root)
    return found, time.perf_counter() - t


def row_for(name: str, root: Path, notes: dict[Key, LineNotes], reviewed_only: bool) -> Row:
    findings, scan_s = timed_scan(root)
    s = score(name, notes, findings)
    unreviewed = 0
    false_pos = len(s.false_positives)
    if reviewed_only:  # a real tree: an unlisted line is unreviewed, not false
        unreviewed = len(s.false_error) + len(s.other)
        false_pos = len(s.false_ok)
    hits, grep_s = grep(root)
    hazard_lines = {(p, ln) for p, ln, _ in s.hazards}
    # in an annotated workspace every line is judged (unannotated = no hazard); on a real tree only listed ones
    judged = hits & set(notes) if reviewed_only else hits
    return Row(name, len(python_files(root)), len(s.hazards), len(s.hits), false_pos, len(s.wrong_rule),
               unreviewed, len({(p, ln, r) for p, ln, r in s.hazards if (p, ln) in hits}), len(hits),
               len(judged - hazard_lines), len(hits - judged), scan_s, grep_s)


def truth_notes(path: Path) -> dict[Key, LineNotes]:
    notes: dict[Key, LineNotes] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for rec in csv.DictReader(fh, delimiter="\t"):
            n = notes.setdefault((rec["path"], int(rec["line"])), LineNotes())
            verdict = rec["verdict"].strip().lower()
            if verdict == "hazard":
                n.ruleid.add(rec["rule"])
            elif verdict == "ok":
                n.ok.add(rec["rule"])
            else:
                raise SystemExit(f"bench_reach: {path}: verdict must be hazard or ok, not {rec['verdict']!r}")
    return notes


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def table(rows: list[Row]) -> str:
    head = ("workspace", "files", "hazards", "denpex", "recall", "FP", "wrong rule", "unrev.", "grep", "recall",
            "grep hits", "not hazard", "grep unrev.", "scan s", "rg s")
    body = [(r.name, str(r.files), str(r.hazards), str(r.found), pct(r.found, r.hazards), str(r.false_pos),
             str(r.wrong_rule), str(r.unreviewed), str(r.grep_found), pct(r.grep_found, r.hazards), str(r.grep_hits),
             str(r.grep_not_hazard), str(r.grep_unreviewed), f"{r.scan_s:.2f}", f"{r.grep_s:.3f}") for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths)), *(fmt.format(*b) for b in body)])


def total(name: str, rows: list[Row]) -> Row:
    return Row(name, *(sum(getattr(r, f) for r in rows) for f in (
        "files", "hazards", "found", "false_pos", "wrong_rule", "unreviewed", "grep_found", "grep_hits",
        "grep_not_hazard", "grep_unreviewed", "scan_s", "grep_s")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, action="append", default=[], help="a real project folder")
    ap.add_argument("--truth", type=Path, action="append", default=[], help="its ground-truth TSV")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    ap.add_argument("--trees-only", action="store_true", help="leave out the tests/data/reach workspaces")
    args = ap.parse_args(argv)
    if len(args.tree) != len(args.truth):
        ap.error("give one --truth FILE per --tree DIR")
    if shutil.which("rg") is None:
        print("bench_reach: error: rg (ripgrep), the peer, is not on PATH", file=sys.stderr)
        return 2
    rows: list[Row] = []
    groups: dict[str, list[Row]] = {}
    for d in [] if args.trees_only else workspaces():
        r = row_for(f"{d.parent.name}/{d.name}", d, annotations_in(d), reviewed_only=False)
        rows.append(r)
        groups.setdefault(d.parent.name, []).append(r)
    for tree, truth in zip(args.tree, args.truth, strict=True):
        if not tree.is_dir() or not truth.is_file():
            print(f"bench_reach: error: {tree} is not a folder or {truth} is not a file", file=sys.stderr)
            return 2
        r = row_for(f"tree/{tree.name}", tree, truth_notes(truth), reviewed_only=True)
        rows.append(r)
        groups.setdefault("tree", []).append(r)
    totals = [total(f"TOTAL {g}", rs) for g, rs in groups.items()]
    print(table(rows + totals))
    print()
    print("denpex = annotated hazards flagged on their line by their rule; FP = a finding on a `# ok:` line, or an"
          " error-level one on an unannotated line; unrev. = on a real tree, lines its truth file does not list; grep = annotated hazards (any rule) on a line the peer hits;"
          f" peer: rg -n '{GREP_PATTERN}'")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows + totals], indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
