"""Incremental-equivalence check for the source analyser's Document path.

    python bench/check_incremental.py [--edits N] [--seed S] [--quick]

Corpus: every GPU scenario (tests/data/gpu/scenarios), every rule's source examples (invalid / valid / fixed),
the Python snippets embedded in tests/source/*.py (string constants that look like captured code), and the
6,400-line file of bench/bench_scan.py. For each text, one `Document` receives a seeded series of random
single-line edits (insert / delete / modify a line, half of them near capture code, as LSP-style range edits
and sometimes as a whole-text `update_text`) and after every edit its `analyse()` must return exactly the
findings (positions, messages, fixes and their edits, suppressions, capture sites) of a fresh
`Document(path, text).analyse()` of the same text. Exit status 1 and a report on the first mismatches.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, os.environ.get("DENPEX_SERVER", str(REPO / "server")))  # another checkout's analyser
sys.path.insert(0, str(HERE))

from denpex.source import Document, TextEdit  # noqa: E402

SCENARIOS = REPO / "tests" / "data" / "gpu" / "scenarios"
CAPTURE_WORDS = ("graph", "capture", "compile", "replay", "item()", "make_graphed")

SNIPPET_LINES = [
    "x = y.item()",
    "print(x)",
    "loss = out.sum()",
    "if t.sum() > 0:",
    "    pass",
    "n = int(z)",
    "g.replay()",
    "torch.cuda.synchronize()",
    "y = x.nonzero()",
    "s = t.cpu()",
    "static_out = model(static_in)",
    "count += 1",
    "# a comment",
    "",
    "opt.step()",
    "h = helper(a, b)",
    "def helper(a, b):",
    "    return a.item()",
    "import torch",
    "with torch.cuda.graph(g):",
    "z = torch.zeros(4, device='cuda')",
    "static_out.copy_(w)",
    "return out",
    "data[idx] = 0",
    "self.buf = torch.empty(8)",
    "log.info(f'{x}')",
]
STATS = {"whole-file reuse": 0, "partial region reuse": 0}
MODIFIERS = ["  # typing", "x", ".item()", " + 1", "(", ")", ":", " if c else d", "y", "print"]


def corpus() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for p in sorted(SCENARIOS.glob("*.py")):
        out.append((f"scenario:{p.name}", p.read_text()))
    # several scenarios in one file, each wrapped in a function (as in the big file): many capture regions
    # in separate scopes, so that edits inside one capture keep the results of the others
    import textwrap

    scen = sorted(SCENARIOS.glob("*.py"))
    for i in range(0, len(scen), 4):
        parts = [f"def scenario_{j}():\n" + textwrap.indent(p.read_text(), "    ", lambda line: True)
                 for j, p in enumerate(scen[i : i + 4])]
        out.append((f"multi:{i}", "\n".join(parts)))
    import yaml

    for p in sorted((REPO / "rules").glob("*/*.yaml")):
        data = yaml.safe_load(p.read_text()) or {}
        src = data.get("source") or {}
        ex = src.get("examples") or {}
        for k in ("invalid", "valid", "fixed"):
            v = ex.get(k)
            if isinstance(v, str) and v.strip():
                out.append((f"rule:{p.stem}:{k}", v))
    for p in sorted((REPO / "tests" / "source").glob("*.py")):
        try:
            tree = ast.parse(p.read_text())
        except SyntaxError:
            continue
        for i, node in enumerate(ast.walk(tree)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.count("\n") >= 3:
                v = node.value
                if any(w in v for w in ("graph", "compile", "capture")):
                    try:
                        ast.parse(v)
                    except SyntaxError:
                        continue
                    out.append((f"test:{p.name}:{node.lineno}:{i}", v))
    return out


def big_text() -> str:
    from bench_scan import big_file, build_tree

    return big_file(build_tree(HERE / "data" / "scan-tree"))


def capture_lines(lines: list[str]) -> list[int]:
    near: set[int] = set()
    for i, ln in enumerate(lines):
        if any(w in ln for w in CAPTURE_WORDS):
            for j in range(max(0, i - 3), min(len(lines), i + 12)):
                near.add(j)
    return sorted(near)


def random_edit(rng: random.Random, text: str) -> TextEdit:
    lines = text.split("\n")
    near = capture_lines(lines)
    row = rng.choice(near) if near and rng.random() < 0.6 else rng.randrange(len(lines))
    line = lines[row]
    indent = line[: len(line) - len(line.lstrip())]
    op = rng.random()
    if op < 0.3:  # insert a line before `row`
        new = rng.choice(SNIPPET_LINES + [line.strip()] * 3)
        return TextEdit(row, 0, row, 0, indent + new + "\n")
    if op < 0.5 and len(lines) > 2:  # delete line `row`
        if row + 1 < len(lines):
            return TextEdit(row, 0, row + 1, 0, "")
        return TextEdit(row - 1, len(lines[row - 1]), row, len(line), "")
    if op < 0.8:  # type at the end of the line
        return TextEdit(row, len(line), row, len(line), rng.choice(MODIFIERS))
    if line.strip():  # replace a span of the line
        a = rng.randrange(len(line))
        b = rng.randrange(a, len(line) + 1)
        return TextEdit(row, a, row, b, rng.choice([*MODIFIERS, "", "z", "tmp", "self"]))
    return TextEdit(row, 0, row, len(line), indent + rng.choice(SNIPPET_LINES))


def apply_one(text: str, e: TextEdit) -> str:
    lines = text.split("\n")
    before = "\n".join(lines[: e.start_line]) + ("\n" if e.start_line else "")
    s = len(before) + e.start_col
    before_end = "\n".join(lines[: e.end_line]) + ("\n" if e.end_line else "")
    t = len(before_end) + e.end_col
    return text[:s] + e.new_text + text[t:]


def check(name: str, text: str, n_edits: int, rng: random.Random, problems: list[str],
          golden: list[str]) -> int:
    doc = Document(name + ".py", text)
    golden.append(repr(doc.analyse()))
    checked = 0
    for k in range(n_edits):
        e = random_edit(rng, doc.text)
        new_text = apply_one(doc.text, e)
        if rng.random() < 0.15:
            doc.update_text(new_text)
        else:
            doc.apply_edits([e])
        if doc.text != new_text:
            problems.append(f"{name} edit {k}: document text differs from the expected text after {e}")
            return checked
        got = doc.analyse()
        STATS["whole-file reuse"] += doc.last_was_incremental
        STATS["partial region reuse"] += (not doc.last_was_incremental and getattr(doc, "last_reused_regions", 0) > 0)
        want = Document(name + ".py", new_text).analyse()
        golden.append(repr(want))
        checked += 1
        if got != want:
            gs, ws = set(got), set(want)
            detail = [f"  missing: {f.rule}@{f.start_line}:{f.start_col}" for f in want if f not in gs][:5]
            detail += [f"  extra:   {f.rule}@{f.start_line}:{f.start_col}" for f in got if f not in ws][:5]
            if not detail:
                detail = ["  same set, different order"]
            problems.append(f"{name} edit {k} {e!r}: incremental != fresh\n" + "\n".join(detail))
            doc = Document(name + ".py", new_text)  # go on from a fresh document (the edits stay the same)
            doc.analyse()
    return checked


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edits", type=int, default=12, help="edits per small text")
    ap.add_argument("--big-edits", type=int, default=60, help="edits on the big file")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--quick", action="store_true", help="skip the big file")
    ap.add_argument("--save", type=Path, help="write every fresh analysis (repr) to this file")
    ap.add_argument("--compare", type=Path, help="compare every fresh analysis with a file written by --save "
                    "(same seed and options), e.g. by the analyser before a change")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    problems: list[str] = []
    texts = corpus()
    t0 = time.perf_counter()
    total = 0
    golden: list[str] = []
    for name, text in texts:
        total += check(name, text, args.edits, rng, problems, golden)
    if not args.quick:
        total += check("big", big_text(), args.big_edits, rng, problems, golden)
    if args.save is not None:
        args.save.write_text("\n".join(golden) + "\n")
    if args.compare is not None:
        before = args.compare.read_text().split("\n")[:-1]
        diff = [i for i, (a, b) in enumerate(zip(before, golden, strict=False)) if a != b]
        if len(before) != len(golden) or diff:
            problems.append(f"fresh analyses differ from {args.compare}: {len(before)} vs {len(golden)} analyses, "
                            f"first differing analysis #{diff[0] if diff else '-'}")
        else:
            print(f"fresh analyses identical to {args.compare} ({len(golden)} analyses)")
    dt = time.perf_counter() - t0
    print(f"{len(texts) + (0 if args.quick else 1)} texts, {total} edits checked in {dt:.1f} s, "
          f"{len(problems)} mismatching text(s); analyses re-using findings: {STATS}")
    for p in problems[:20]:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
