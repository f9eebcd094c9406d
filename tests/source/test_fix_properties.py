"""Property: every fix leaves parseable Python and changes nothing outside its edits."""

from __future__ import annotations

import ast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from denpex.source import analyse_source
from denpex.source.engine.analyse import apply_edits

HAZARDS = [
    "v = {t}.sum().item()", "print({t})", "{t}[2] = 3.0", "host = {t}.cpu()", "torch.cuda.synchronize()",
    "idx = torch.nonzero({t} > 0)", "m = {t}[{t} > 0]", "c = torch.tensor([1.0, 2.0], device='cuda')",
    "torch.manual_seed(0)", "if {t}.sum() > 0:\n    {t} = {t} + 1", "f = float({t}.max())",
    "with torch.cuda.stream(s2):\n    z = {t} + 1", "opt.step()", "r = torch.rand(4, device='cuda')",
    "msg = f'{{{t}}}'", "time.perf_counter()",
]
NAMES = st.sampled_from(["x", "static_x", "buf", "h"])


@st.composite
def programs(draw: st.DrawFn) -> str:
    t = draw(NAMES)
    body = draw(st.lists(st.sampled_from(HAZARDS), min_size=1, max_size=5))
    indent = draw(st.sampled_from(["    ", "  ", "\t"]))
    in_func = draw(st.booleans())
    lines = [
        "import time", "import torch", f"{t} = torch.randn(8, device='cuda')", "s2 = torch.cuda.Stream()",
        "model = torch.nn.Linear(8, 8).cuda()", "opt = torch.optim.Adam(model.parameters(), lr=0.1)",
        "scale = 2.0", "g = torch.cuda.CUDAGraph()",
    ]
    inner = []
    for h in body:
        inner.extend(h.format(t=t).split("\n"))
    if in_func:
        lines.append("def step():")
        lines.extend(indent + ln.replace("    ", indent) for ln in inner)
        lines.append(indent + f"return {t}")
        lines.append("with torch.cuda.graph(g):")
        lines.append(indent + "out = step()")
    else:
        lines.append("with torch.cuda.graph(g):  # capture")
        lines.extend(indent + ln.replace("    ", indent) for ln in inner)
    lines.append("g.replay()")
    if draw(st.booleans()):
        lines.append("scale = 3.0")
        lines.append("g.replay()")
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


def outside_unchanged(before: str, after: str, edits: list[tuple[int, int, int, int, str]]) -> bool:
    """Text before the first edit and after the last edit is untouched."""
    lines = before.split("\n")

    def off(line: int, col: int) -> int:
        return sum(len(x) + 1 for x in lines[:line]) + col

    spans = sorted((off(a, b), off(c, d), t) for a, b, c, d, t in edits)
    first, last = spans[0][0], spans[-1][1]
    growth = sum(len(t) - (e - s) for s, e, t in spans)
    return after[:first] == before[:first] and after[last + growth:] == before[last:]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_every_fix_is_valid_and_local(src: str) -> None:
    ast.parse(src)
    for f in analyse_source(src, "p.py"):
        for fx in (*f.fixes, *([f.suppression] if f.suppression else [])):
            if not fx.edits:
                continue
            out = apply_edits(src, fx.edits)
            ast.parse(out)  # valid Python
            edits = [(e.start_line, e.start_col, e.end_line, e.end_col, e.new_text) for e in fx.edits]
            assert outside_unchanged(src, out, edits), fx.title
            if len(fx.edits) == 1:
                e = fx.edits[0]
                lines = src.split("\n")
                start = sum(len(x) + 1 for x in lines[: e.start_line]) + e.start_col
                end = sum(len(x) + 1 for x in lines[: e.end_line]) + e.end_col
                assert out == src[:start] + e.new_text + src[end:]


MUTATIONS = ["\ud800", "\x00", "x" * 300, "(", ")", ":", "\n    ", "é", "with torch.cuda.graph(g):\n", "'''", "\\", "\t"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(MUTATIONS), st.integers(0, 30)),
                            min_size=1, max_size=6))
def test_broken_text_never_raises(src: str, muts: list[tuple[int, str, int]]) -> None:
    """Half-typed code (lone surrogates, NULs, unbalanced brackets) never makes the analyser raise, and
    every fix it still offers applies cleanly."""
    text = src
    for pos, ins, cut in muts:
        p = pos % (len(text) + 1)
        text = text[:p] + ins + text[p + cut:]
    for f in analyse_source(text, "m.py"):
        for fx in (*f.fixes, *([f.suppression] if f.suppression else [])):
            apply_edits(text, fx.edits)
