"""Shared helpers for the source-analyser tests."""

from __future__ import annotations

import re
from pathlib import Path

from denpex.rulebook import Rule, RuleBook
from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import analyse_source, analyse_workspace, apply_edits
from denpex.source.model import SourceFinding
from denpex.source.resolve.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
# the GPU scenarios as run on the H200, kept in the repository (tests/data/README.md)
SCENARIOS = REPO / "tests" / "data" / "gpu" / "scenarios"

_ANNOT = re.compile(r"#\s*(ruleid|ok):\s*([a-z0-9-]+)")


def annotations(text: str) -> dict[str, dict[int, set[str]]]:
    out: dict[str, dict[int, set[str]]] = {"ruleid": {}, "ok": {}}
    for i, line in enumerate(text.splitlines()):
        for m in _ANNOT.finditer(line):
            out[m.group(1)].setdefault(i, set()).add(m.group(2))
    return out


def rule_findings(text: str, rule: Rule, book: RuleBook, path: str = "example.py") -> list[SourceFinding]:
    return [f for f in analyse_source(text, path, rulebook=book) if f.rule == rule.id]


def apply_first_fixes(text: str, findings: list[SourceFinding]) -> str:
    """The first fix of every finding, skipping fixes that overlap one already taken."""
    edits = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for f in findings:
        if not f.fixes:
            continue
        fx = f.fixes[0]
        spans = [((e.start_line, e.start_col), (e.end_line, e.end_col)) for e in fx.edits]
        if any((a[0] < b[1] and b[0] < a[1]) or a[0] == b[0] for a in spans for b in taken):
            continue
        taken.extend(spans)
        edits.extend(fx.edits)
    return apply_edits(text, edits)


def check_examples(rule: Rule, book: RuleBook) -> list[str]:
    """Problems with a rule's own examples (empty when they all hold)."""
    assert rule.source is not None
    problems: list[str] = []
    inv = rule.source.invalid
    found = rule_findings(inv, rule, book)
    lines = {f.start_line for f in found}
    want = {ln for ln, ids in annotations(inv)["ruleid"].items() if rule.id in ids}
    for ln in sorted(want - lines):
        problems.append(f"invalid line {ln + 1} not flagged: {inv.splitlines()[ln].strip()}")
    for ln in sorted(lines - want):
        problems.append(f"invalid line {ln + 1} flagged but not annotated: {inv.splitlines()[ln].strip()}")
    val = rule.source.valid
    vfound = {f.start_line for f in rule_findings(val, rule, book)}
    for ln, ids in annotations(val)["ok"].items():
        if rule.id in ids and ln in vfound:
            problems.append(f"valid line {ln + 1} flagged: {val.splitlines()[ln].strip()}")
    if rule.source.fixed is not None:
        got = apply_first_fixes(inv, found)
        if got != rule.source.fixed:
            problems.append(f"fixed differs:\n--- got\n{got}\n--- want\n{rule.source.fixed}")
    problems.extend(idempotence_problems(inv, found, rule, book))
    return problems


def idempotence_problems(text: str, found: list[SourceFinding], rule: Rule, book: RuleBook) -> list[str]:
    """Each finding's first fix, applied once, leaves nothing for the same fix to do on that line."""
    problems: list[str] = []
    lines = text.splitlines()
    for f in found:
        if not f.fixes:
            continue
        once = apply_edits(text, f.fixes[0].edits)
        target = lines[f.start_line].strip()
        again = [g for g in rule_findings(once, rule, book)
                 if g.hazard == f.hazard and once.splitlines()[g.start_line].strip() == target
                 and g.fixes and g.fixes[0].title == f.fixes[0].title]
        if again:
            problems.append(f"fix {f.fixes[0].title!r} for line {f.start_line + 1} is not idempotent")
    return problems


def capture_program(imports: str, statement: str) -> str:
    """A program that captures `statement` (one line, `x` a CUDA tensor) in a graph and replays it."""
    return (f"import torch\n{imports}\n\n\nx = torch.ones(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
            f"with torch.cuda.graph(g):\n    {statement}\ng.replay()\n")


def workspace_flags(files: dict[str, str]) -> set[tuple[str, int, str]]:
    """(file name, 1-based line, rule) of every finding of a whole-workspace analysis of `files` (names under /w)."""
    ws = Workspace([])
    for name, text in files.items():
        ws.add_file(f"/w/{name}", text)
    found = analyse_workspace(ws, config=ScanConfig())
    return {(p.rsplit("/", 1)[-1], f.start_line + 1, f.rule) for p, fs in found.items() for f in fs}
