"""Fixes that depend on where the graph is replayed: the eager fallback and "move it after the replay".

Found on the GPU (tests/gpu/results, 2026-11-30): the eager fallback removed the capture but left `g.replay()`,
which then raised "Called CUDAGraph::replay without a preceding successful capture" (20 of 20 cases), and
"Move it after the replay" put the statement after the capture block when the replay sat in a following loop
(a counter read 1 instead of 3). These tests pin the corrected designs, run the fixed code against a stand-in
`torch` whose replay fails without a capture, and check the shapes for which no fix may be offered.
"""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

import pytest

from denpex.source import Document, TextEdit, Workspace, analyse_source
from denpex.source.engine.analyse import apply_edits
from denpex.source.model import Fix, SourceFinding

EAGER = "Run without CUDA-graph capture (eager fallback)"
MOVE = "Move it after the replay (read the static output outside the capture)"
SCALER = "Run scaler.step()/update() eagerly after each replay"


def fixes_titled(findings: list[SourceFinding], title: str, rule: str | None = None) -> list[Fix]:
    return [fx for f in findings if rule is None or f.rule == rule for fx in f.fixes if fx.title == title]


def only_fix(text: str, title: str, rule: str | None = None, path: str = "t.py") -> str:
    found = fixes_titled(analyse_source(text, path), title, rule)
    assert found, f"no {title!r} offered"
    assert len({fx.edits for fx in found}) == 1, "findings of one region offer different edits"
    out = apply_edits(text, found[0].edits)
    ast.parse(out)
    return out


class _Graph:
    def __init__(self) -> None:
        self.captured = False

    def capture_begin(self) -> None:
        self.captured = True

    def capture_end(self) -> None:
        pass

    def replay(self) -> None:
        if not self.captured:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")


class _GraphCM:
    def __init__(self, g: _Graph) -> None:
        self.g = g

    def __enter__(self) -> None:
        self.g.captured = True

    def __exit__(self, *exc: object) -> bool:
        return False


def run(text: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Execute `text` with a stand-in `torch` (Python numbers for tensors; a replay without a capture raises
    as the real one does; a "captured" block runs its Python once, as at capture)."""
    cuda = types.SimpleNamespace(CUDAGraph=_Graph, graph=_GraphCM, synchronize=lambda: None)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda, randn=lambda *a, **k: 1.0))
    env: dict[str, Any] = {}
    exec(compile(text, "fixed.py", "exec"), env)
    return env


COUNTER_LOOP = """import torch

x = torch.randn(16, device="cuda")
steps = 0
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = x * 2
    steps += 1
for _ in range(3):
    g.replay()
torch.cuda.synchronize()
"""


# ---- eager fallback ----------------------------------------------------------------------------------------------
def test_eager_fallback_recomputes_at_every_replay_in_a_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    out = only_fix(COUNTER_LOOP, EAGER)
    assert out == """import torch

x = torch.randn(16, device="cuda")
steps = 0
g = torch.cuda.CUDAGraph()
for _ in range(3):
    out = x * 2
    steps += 1
torch.cuda.synchronize()
"""
    assert run(out, monkeypatch)["steps"] == 3  # as eager: one step per "replay", none at the capture
    assert not fixes_titled(analyse_source(out, "t.py"), EAGER)  # nothing left to do: idempotent


def test_eager_fallback_replaces_each_replay_and_keeps_the_code_between(monkeypatch: pytest.MonkeyPatch) -> None:
    text = """import torch

x = torch.randn(4, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2
    v = y.sum().item()
x = 5
g.replay()
first = v
g.replay()
"""
    out = only_fix(text, EAGER, "capture-item-sync")
    assert out == """import torch

x = torch.randn(4, device="cuda")
g = torch.cuda.CUDAGraph()
x = 5
y = x * 2
v = y.sum().item()
first = v
y = x * 2
v = y.sum().item()
"""


def test_eager_fallback_capture_begin_form_in_a_function(monkeypatch: pytest.MonkeyPatch) -> None:
    text = """import torch

total = 0


def train(n):
    global total
    g = torch.cuda.CUDAGraph()
    g.capture_begin()
    total += 1
    g.capture_end()
    i = 0
    while i < n:
        g.replay()
        i += 1
    return g is None


train(4)
"""
    # `g is None` reads the graph object: not all its uses are replays, so no fix that rewrites them
    assert not fixes_titled(analyse_source(text, "t.py"), EAGER)
    assert not fixes_titled(analyse_source(text, "t.py"), MOVE)
    text = text.replace("    return g is None\n", "    return i\n")
    out = only_fix(text, MOVE)  # the counter: moved into the while loop, after the replay
    assert "        g.replay()\n        total += 1\n" in out
    assert run(out, monkeypatch)["total"] == 4
    out2 = only_fix(text, EAGER)
    assert "g.capture_begin()" not in out2 and "g.replay()" not in out2
    assert "    while i < n:\n        total += 1\n        i += 1\n" in out2
    assert run(out2, monkeypatch)["total"] == 4


def test_eager_fallback_reenters_the_other_context_managers() -> None:
    text = """import torch

x = torch.randn(4, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g), torch.autocast("cuda", dtype=torch.bfloat16):
    y = (x @ x).sum().item()
for _ in range(2):
    g.replay()
"""
    assert only_fix(text, EAGER) == """import torch

x = torch.randn(4, device="cuda")
g = torch.cuda.CUDAGraph()
for _ in range(2):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = (x @ x).sum().item()
"""


def test_eager_fallback_repeats_the_grad_reset_of_a_captured_backward() -> None:
    """A captured backward after zero_grad(set_to_none=True) writes fresh gradients on every replay; the eager
    body must not accumulate them across steps."""
    text = """import torch

model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.Adam(model.parameters(), lr=0.1)
x = torch.randn(4, 8, device="cuda")
opt.zero_grad(set_to_none=True)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    loss = model(x).sum()
    loss.backward()
    opt.step()
for i in range(5):
    g.replay()
"""
    out = only_fix(text, EAGER)
    assert out.endswith("""for i in range(5):
    opt.zero_grad(set_to_none=True)
    loss = model(x).sum()
    loss.backward()
    opt.step()
""")
    assert out.count("opt.zero_grad(set_to_none=True)") == 2  # the one before the (former) capture stays


def test_eager_fallback_of_a_stored_context_manager() -> None:
    text = """import torch
from contextlib import nullcontext

x = torch.randn(4, device="cuda")
g = torch.cuda.CUDAGraph()
ctx = torch.cuda.graph(g)
with ctx:
    v = x.sum().item()
g.replay()
"""
    assert only_fix(text, EAGER).endswith("ctx = torch.cuda.graph(g)\nv = x.sum().item()\n")
    chosen = text.replace("ctx = torch.cuda.graph(g)", "ctx = torch.cuda.graph(g) if x is not None else nullcontext()")
    assert not fixes_titled(analyse_source(chosen, "t.py"), EAGER)  # sometimes eager already: no fix


UNREWRITABLE = {
    "attribute graph": (
        "class R:\n    def capture(self, x):\n        self.g = torch.cuda.CUDAGraph()\n"
        "        with torch.cuda.graph(self.g):\n            self.v = x.sum().item()\n"
        "    def run(self):\n        self.g.replay()\n"
    ),
    "graph stored in a dict": "{setup}graphs = {{'a': g}}\n{capture}graphs['a'].replay()\n",
    "graph passed to a function": "{setup}{capture}replay_all(g)\n",
    "replay in a lambda": "{setup}{capture}go = lambda: g.replay()\ngo()\n",
    "replay used as a value": "{setup}{capture}ok = g.replay()\n",
    "replay as a value (bound method)": "{setup}{capture}g.replay()\nstep = g.replay\n",
    "replay in a nested function": "{setup}{capture}def go():\n    g.replay()\ngo()\n",
    "replay on the with header's row": "{setup}{capture}if True: g.replay()\n",
    "graph returned": "def make(x):\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n"
                      "        v = x.sum().item()\n    g.replay()\n    return g\n",
    "graph parameter": "def capture(g, x):\n    with torch.cuda.graph(g):\n        v = x.sum().item()\n    g.replay()\n",
    "captured twice": "{setup}{capture}g.replay()\nwith torch.cuda.graph(g):\n    w = x.sum().item()\ng.replay()\n",
    "never replayed": "{setup}{capture}",
    "output read before the replay": "{setup}{capture}keep = v\ng.replay()\n",
    "graph global of another scope": "g = torch.cuda.CUDAGraph()\n\ndef capture(x):\n"
                                     "    with torch.cuda.graph(g):\n        v = x.sum().item()\n\ng.replay()\n",
}
SETUP = "x = torch.randn(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
CAPTURE = "with torch.cuda.graph(g):\n    v = x.sum().item()\n"


@pytest.mark.parametrize("shape", sorted(UNREWRITABLE))
def test_no_replay_dependent_fix_when_a_replay_cannot_be_rewritten(shape: str) -> None:
    text = "import torch\n\n" + UNREWRITABLE[shape].format(setup=SETUP, capture=CAPTURE)
    found = analyse_source(text, "t.py")
    assert any(f.rule == "capture-item-sync" for f in found), "the hazard itself is still reported"
    assert not fixes_titled(found, EAGER)
    assert not fixes_titled(found, MOVE)


@pytest.mark.parametrize("other", [
    "from cap import g\n\ng.replay()\n",
    "import cap\n\ncap.g.replay()\n",
    "from pkg import cap\n\ncap.g.replay()\n",
    "from cap import (\n    x,\n    g,\n)\n\ng.replay()\n",
    "def later():\n    from cap import g as graph\n    graph.replay()\n",
])
def test_no_fix_when_another_file_may_replay_a_module_level_graph(other: str) -> None:
    cap = "import torch\n\n" + SETUP + CAPTURE + "g.replay()\n"
    ws = Workspace()
    ws.add_text("cap.py", cap)
    ws.add_text("unrelated.py", "import torch\n\ng = 1\ncap = 2\n")  # spells both, imports neither
    assert fixes_titled(analyse_source(cap, "cap.py", workspace=ws), EAGER)
    ws.add_text("run.py", other)
    assert not fixes_titled(analyse_source(cap, "cap.py", workspace=ws), EAGER)


def test_an_edit_that_mentions_a_module_graph_is_not_local() -> None:
    """The replay analysis reads every mention of a module-level graph, so an edit that adds one inside an
    otherwise untouched function re-runs it (and the fix it no longer allows disappears)."""
    text = "import torch\n\ndef helper(a):\n    b = a + 1\n    return b\n\n" + SETUP + CAPTURE + "g.replay()\n"
    doc = Document("t.py", text)
    assert fixes_titled(doc.analyse(), EAGER)
    doc.apply_edits([TextEdit(3, 13, 3, 13, "\n    c = b * 2")])
    assert fixes_titled(doc.analyse(), EAGER) and doc.last_was_incremental
    doc.apply_edits([TextEdit(4, 13, 4, 13, "\n    keep(g)")])
    after = doc.analyse()
    assert not doc.last_was_incremental
    assert not fixes_titled(after, EAGER)
    assert after == analyse_source(doc.text, "t.py")


def test_make_graphed_callables_and_compile_fallbacks() -> None:
    mgc = """import torch

def fwd(x):
    return x.sum().item()

x = torch.randn(4, device="cuda")
f = torch.cuda.make_graphed_callables(fwd, (x,))
y = f(x)
"""
    assert "f = fwd\ny = f(x)\n" in only_fix(mgc, EAGER)
    comp = """import torch

@torch.compile(mode="reduce-overhead")
def step(x):
    return x * 2

a = step(torch.randn(4, device="cuda"))
b = step(torch.randn(4, device="cuda"))
print(a.sum())
"""
    found = analyse_source(comp, "t.py")
    (fx,) = {f for f in fixes_titled(found, "Compile without CUDA graphs (mode without cudagraphs)")}
    assert '@torch.compile(mode="default")' in apply_edits(comp, fx.edits)


# ---- move it after the replay ------------------------------------------------------------------------------------
def test_move_after_replay_goes_inside_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    out = only_fix(COUNTER_LOOP, MOVE)
    assert out == """import torch

x = torch.randn(16, device="cuda")
steps = 0
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = x * 2
for _ in range(3):
    g.replay()
    steps += 1
torch.cuda.synchronize()
"""
    assert run(out, monkeypatch)["steps"] == 3
    assert not fixes_titled(analyse_source(out, "t.py"), MOVE)  # idempotent: nothing left to move


def test_move_after_replay_follows_every_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    text = COUNTER_LOOP.replace("torch.cuda.synchronize()\n", "if steps >= 0:\n    g.replay()\n")
    out = only_fix(text, MOVE)
    assert out.endswith("""for _ in range(3):
    g.replay()
    steps += 1
if steps >= 0:
    g.replay()
    steps += 1
""")
    assert run(out, monkeypatch)["steps"] == 4


def test_move_after_replay_not_offered_without_a_known_replay() -> None:
    text = COUNTER_LOOP.replace("for _ in range(3):\n    g.replay()\n", "")
    assert not fixes_titled(analyse_source(text, "t.py"), MOVE)
    passed = COUNTER_LOOP.replace("torch.cuda.synchronize()\n", "bench(g)\n")
    assert not fixes_titled(analyse_source(passed, "t.py"), MOVE)


def test_gradscaler_steps_after_each_replay_in_the_loop() -> None:
    text = """import torch

model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
x = torch.randn(4, 8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    loss = model(x).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
for _ in range(4):
    g.replay()
"""
    assert only_fix(text, SCALER).endswith("""    scaler.scale(loss).backward()
for _ in range(4):
    g.replay()
    scaler.step(opt)
    scaler.update()
""")


# The static-buffer fix of replay-frozen-python-scalar (DPX303) makes the scalar a 0-dim device tensor: right
# where the captured code does arithmetic with it, wrong where an op needs a Python int (torch.roll's shift,
# a slice, a count), which would no longer capture, or where a called function reads it
SCALAR_CASE = """\
import torch

x = torch.randn(16, device="cuda")
k = 2
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = {use}
k = 3
g.replay()
"""
STATIC = "Static buffer: keep the scalar in a 0-dim device tensor and update it in place (fill_())"


@pytest.mark.parametrize("use", ["x * k", "x * k + 1", "(x - k) / 2"])
def test_the_static_buffer_is_offered_for_arithmetic_in_the_capture(use: str) -> None:
    out = only_fix(SCALAR_CASE.format(use=use), STATIC, "replay-frozen-python-scalar")
    assert 'k = torch.full((), 2, device="cuda")' in out and "k.fill_(3)" in out


@pytest.mark.parametrize("use", ["torch.roll(x, shifts=k)", "x[:k]", "x.repeat(k)", "torch.ones(k, device='cuda')",
                                 "x * int(k)"])
def test_no_static_buffer_where_an_op_needs_a_python_int(use: str) -> None:
    found = analyse_source(SCALAR_CASE.format(use=use), "t.py")
    assert [f for f in found if f.rule == "replay-frozen-python-scalar"], found  # still reported
    assert not fixes_titled(found, STATIC), found
