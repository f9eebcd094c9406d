"""Issue 21's re-capture fix (rules/_recapture_fix.py) for replay-frozen-python-scalar (DPX303, both its paths)
and replay-frozen-branch (DPX310, beside the device-flag fix): one graph per value of the frozen value, in a dict
keyed by it. Offered only in the narrow shape of that module: each fixed program must parse, be exactly the
expected text where spelled out, lose the finding and gain no other; the runnable ones are also run on the CPU
with the stand-in CUDA graph of test_frozen_branch_fix (its replay differs from eager, the fixed one matches);
shapes outside (a float, a capture in another function, a return in the capture, an unpacking into an attribute,
a graph that is no plain name, ...) get no such fix."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from denpex.source import analyse_source
from denpex.source.engine.analyse import apply_edits
from denpex.source.model import Fix, SourceFinding
from tests.source.test_frozen_branch_fix import _run

GPU = Path(__file__).resolve().parents[1] / "gpu" / "frozen_state"
SCALAR = "replay-frozen-python-scalar"
BRANCH = "replay-frozen-branch"
HEAD = "Re-capture per value: keep one graph per value of "


def _findings(text: str, rule: str) -> list[SourceFinding]:
    return [f for f in analyse_source(text, "case.py") if f.rule == rule]


def _recapture(f: SourceFinding) -> list[Fix]:
    return [fx for fx in f.fixes if fx.title.startswith(HEAD)]


def _fixed(text: str, rule: str, value: str) -> str:
    """The program after the finding's re-capture fix: unsafe, titled for `value`, parses, clears the rule and adds
    no finding."""
    text = textwrap.dedent(text)
    found = _findings(text, rule)
    assert len(found) == 1, found
    fixes = _recapture(found[0])
    assert len(fixes) == 1, [fx.title for fx in found[0].fixes]
    assert fixes[0].title.startswith(f"{HEAD}{value} in a dict")
    assert fixes[0].safety == "unsafe"
    out: str = apply_edits(text, fixes[0].edits)
    ast.parse(out)
    assert _findings(out, rule) == []
    before = {(f.rule, f.message) for f in analyse_source(text, "case.py") if f.rule != rule}
    after = {(f.rule, f.message) for f in analyse_source(out, "case.py")}
    assert after <= before, after - before
    return out


def _no_recapture(text: str, rule: str) -> None:
    found = _findings(textwrap.dedent(text), rule)
    assert found, "the shape must still be flagged"
    assert [fx.title for f in found for fx in _recapture(f)] == []


def _only_inserted(before: str, after: str) -> None:
    """The fix removes and changes no line: the original lines appear in order in the result."""
    it = iter(after.splitlines())
    assert all(any(line == got for got in it) for line in textwrap.dedent(before).splitlines())


# ---- replay-frozen-python-scalar, the baked-name path -----------------------------------------------------------
ROLL = """\
import torch

x = torch.randn(8, 64, device="cuda")
k = 0
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = torch.roll(x, shifts=k, dims=1)
for step in range(6):
    k = step % 3
    g.replay()
    print(out.sum().item())
"""

ROLL_FIXED = """\
import torch

x = torch.randn(8, 64, device="cuda")
k = 0
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = torch.roll(x, shifts=k, dims=1)
_graphs = {k: (g, out)}
for step in range(6):
    k = step % 3
    if k not in _graphs:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = torch.roll(x, shifts=k, dims=1)
        _graphs[k] = (g, out)
    g, out = _graphs[k]
    g.replay()
    print(out.sum().item())
"""


def test_module_script_counter_modulo_is_fixed_exactly() -> None:
    found = _findings(ROLL, SCALAR)
    # no static buffer: torch.roll's shift must be a Python int, a 0-dim tensor there would not capture
    assert [fx.title.split(":")[0] for fx in found[0].fixes] == ["Re-capture per value"]
    out = _fixed(ROLL, SCALAR, "k")
    assert out == ROLL_FIXED
    _only_inserted(ROLL, out)


IN_FUNCTION = """\
import torch


def run(x, steps):
    mode = 0
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h = x * 2
        out = torch.roll(h, shifts=mode, dims=0)
    res = []
    for step in range(steps):
        mode = step % 2 == 0
        g.replay()
        res.append(out.clone())
    return res
"""


def test_inside_a_function_the_dict_is_a_local() -> None:
    out = _fixed(IN_FUNCTION, SCALAR, "mode")
    assert "    _graphs = {mode: (g, h, out)}\n    res = []\n" in out
    assert ("        if mode not in _graphs:\n            g = torch.cuda.CUDAGraph()\n"
            "            with torch.cuda.graph(g):\n                h = x * 2\n") in out
    assert "            _graphs[mode] = (g, h, out)\n        g, h, out = _graphs[mode]\n        g.replay()\n" in out
    _only_inserted(IN_FUNCTION, out)


def test_a_fresh_name_when_graphs_is_taken() -> None:
    text = ROLL.replace("x = torch", "_graphs = None\nx = torch")
    out = _fixed(text, SCALAR, "k")
    assert "_graphs2 = {k: (g, out)}" in out and "g, out = _graphs2[k]" in out


# ---- replay-frozen-python-scalar, the loop-counter path --------------------------------------------------------
COUNTER = """\
import torch

sig = [0.1, 0.2, 0.3, 0.4]
x = torch.randn(8, device="cuda")


def step(x, i):
    return x * sig[i]


graph = None
for i in range(3):
    if graph is None:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step(x, i)
    graph.replay()
"""

COUNTER_FIXED = """\
import torch

sig = [0.1, 0.2, 0.3, 0.4]
x = torch.randn(8, device="cuda")


def step(x, i):
    return x * sig[i]


graph = None
for i in range(3):
    if graph is None:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step(x, i)
        _graphs = {i: (graph, out)}
    if i not in _graphs:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step(x, i)
        _graphs[i] = (graph, out)
    graph, out = _graphs[i]
    graph.replay()
"""


def test_range_counter_captured_once_in_the_loop_is_fixed_exactly() -> None:
    found = _findings(COUNTER, SCALAR)
    assert [fx.title.split(":")[0] for fx in found[0].fixes] == ["Re-capture per value"]  # no static buffer here
    out = _fixed(COUNTER, SCALAR, "i")
    assert out == COUNTER_FIXED
    _only_inserted(COUNTER, out)


def test_two_space_indentation_is_kept() -> None:
    text = COUNTER.replace("    ", "  ")
    out = _fixed(text, SCALAR, "i")
    assert out == COUNTER_FIXED.replace("    ", "  ")


def test_a_hand_written_dict_of_graphs_is_not_flagged() -> None:
    keyed = COUNTER.replace("graph = None\n", "graphs = {}\n").replace(
        "    if graph is None:\n        graph = torch.cuda.CUDAGraph()\n        with torch.cuda.graph(graph):\n"
        "            out = step(x, i)\n",
        "    if i not in graphs:\n        graph = torch.cuda.CUDAGraph()\n        with torch.cuda.graph(graph):\n"
        "            out = step(x, i)\n        graphs[i] = (graph, out)\n    graph, out = graphs[i]\n")
    assert "graph, out = graphs[i]\n    graph.replay()" in keyed
    assert _findings(keyed, SCALAR) == []


# ---- replay-frozen-branch -------------------------------------------------------------------------------------
GLOBAL_FLAG = """\
import torch

lin = torch.nn.Linear(8, 8).cuda()
USE_MASK = True


def step(x):
    h = lin(x)
    if USE_MASK:
        return h * 2
    return h - 1


static_x = torch.randn(4, 8, device="cuda")
lin(static_x)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = step(static_x)
for epoch in range(4):
    USE_MASK = epoch % 2 == 1
    g.replay()
"""


def test_bool_flag_flipped_each_epoch_gets_both_fixes() -> None:
    found = _findings(GLOBAL_FLAG, BRANCH)
    assert [fx.title.split(":")[0] for fx in found[0].fixes] == ["Device flag", "Re-capture per value"]
    out = _fixed(GLOBAL_FLAG, BRANCH, "USE_MASK")
    assert out == GLOBAL_FLAG.replace("    out = step(static_x)\n", "    out = step(static_x)\n"
                                      "_graphs = {USE_MASK: (g, out)}\n").replace(
        "    g.replay()\n",
        "    if USE_MASK not in _graphs:\n        g = torch.cuda.CUDAGraph()\n        with torch.cuda.graph(g):\n"
        "            out = step(static_x)\n        _graphs[USE_MASK] = (g, out)\n    g, out = _graphs[USE_MASK]\n"
        "    g.replay()\n")


METHOD = """\
import torch


class Runner:
    def __init__(self):
        self.lin = torch.nn.Linear(8, 8).cuda()
        self.scale_up = True

    def step(self, x):
        h = self.lin(x)
        if self.scale_up:
            h = h * 2
        return h

    def run(self, x):
        self.lin(x)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = self.step(x)
        res = []
        for epoch in range(4):
            self.scale_up = epoch < 2
            g.replay()
            res.append(out.clone())
        return res
"""


def test_self_attribute_of_the_capturing_method() -> None:
    out = _fixed(METHOD, BRANCH, "self.scale_up")
    assert "        _graphs = {self.scale_up: (g, out)}\n" in out
    assert ("            if self.scale_up not in _graphs:\n                g = torch.cuda.CUDAGraph()\n"
            "                with torch.cuda.graph(g):\n                    out = self.step(x)\n"
            "                _graphs[self.scale_up] = (g, out)\n            g, out = _graphs[self.scale_up]\n"
            "            g.replay()\n") in out
    _only_inserted(METHOD, out)


def test_a_flag_where_the_device_flag_fix_does_not_apply() -> None:
    """Two statements in the branch: no torch.where rewrite, the re-capture still fits."""
    text = GLOBAL_FLAG.replace("    if USE_MASK:\n        return h * 2\n",
                               "    if USE_MASK:\n        h = h * 2\n        h = h.relu()\n")
    found = _findings(text, BRANCH)
    assert [fx.title.split(":")[0] for fx in found[0].fixes] == ["Re-capture per value"]
    _fixed(text, BRANCH, "USE_MASK")


def test_a_parameter_passed_by_the_capture() -> None:
    text = """\
    import torch

    lin = torch.nn.Linear(8, 8).cuda()


    def step(x, flip):
        h = lin(x)
        if flip:
            h = torch.flip(h, dims=[1])
        return h


    static_x = torch.randn(4, 8, device="cuda")
    lin(static_x)
    flip = False
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step(static_x, flip)
    for epoch in range(4):
        flip = not flip
        g.replay()
    """
    out = _fixed(text, BRANCH, "flip")
    assert "    if flip not in _graphs:\n" in out


# ---- outside the shape: no re-capture fix --------------------------------------------------------------------
def test_float_value_gets_no_recapture() -> None:
    text = ROLL.replace("k = 0\n", "k = 0.5\n").replace("torch.roll(x, shifts=k, dims=1)", "x * k").replace(
        "k = step % 3", "k = k * 0.9")
    found = _findings(text, SCALAR)
    assert [fx.title.split(":")[0] for fx in found[0].fixes] == ["Static buffer"]
    _no_recapture(text, SCALAR)


def test_augmented_counter_gets_no_recapture() -> None:
    _no_recapture(ROLL.replace("    k = step % 3\n", "    k += 1\n"), SCALAR)


def test_float_from_a_list_gets_no_recapture() -> None:
    _no_recapture(ROLL.replace("    k = step % 3\n", "    k = sig[step]\n").replace("k = 0\n", "k = 0\nsig = [1, 2]\n"),
                  SCALAR)


def test_capture_in_another_function_than_the_replay() -> None:
    _no_recapture("""\
    import torch

    lin = torch.nn.Linear(8, 8).cuda()
    USE_MASK = True


    def step(x):
        h = lin(x)
        if USE_MASK:
            return h * 2
        return h - 1


    def capture(x):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(x)
        return g, out


    static_x = torch.randn(4, 8, device="cuda")
    lin(static_x)
    g, out = capture(static_x)
    for epoch in range(4):
        USE_MASK = epoch % 2 == 1
        g.replay()
    """, BRANCH)


def test_capture_body_with_a_return() -> None:
    _no_recapture("""\
    import torch

    sig = [0.1, 0.2, 0.3, 0.4]


    def step(x, i):
        return x * sig[i]


    def sample(x, n):
        graph = None
        for i in range(n):
            if graph is None:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = step(x, i)
                    if n == 0:
                        return None
            graph.replay()
        return out
    """, SCALAR)


def test_tuple_target_into_an_attribute() -> None:
    text = GLOBAL_FLAG.replace("    out = step(static_x)\n", "    out, lin.last = step(static_x), 1\n")
    _no_recapture(text, BRANCH)


def test_enumerate_index_is_no_range_counter() -> None:
    text = COUNTER.replace("for i in range(3):", "for i, b in enumerate([x, x, x]):")
    _no_recapture(text, SCALAR)


def test_graph_not_a_plain_name() -> None:
    text = METHOD.replace("        g = torch.cuda.CUDAGraph()\n", "        self.g = torch.cuda.CUDAGraph()\n").replace(
        "torch.cuda.graph(g)", "torch.cuda.graph(self.g)").replace("            g.replay()", "            self.g.replay()")
    assert "self.g.replay()" in text
    _no_recapture(text, BRANCH)


def test_an_output_aliased_before_the_loop() -> None:
    _no_recapture(ROLL.replace("for step in range(6):", "y = out\nfor step in range(6):").replace(
        "out.sum()", "y.sum()"), SCALAR)


def test_a_capture_input_rebound_in_the_loop() -> None:
    _no_recapture(ROLL.replace("    k = step % 3\n", "    k = step % 3\n    x = torch.randn(8, 64, device=\"cuda\")\n"),
                  SCALAR)


def test_two_replays_in_the_loop() -> None:
    _no_recapture(ROLL.replace("    g.replay()\n", "    g.replay()\n    g.replay()\n"), SCALAR)


def test_graph_passed_elsewhere() -> None:
    _no_recapture(ROLL.replace("for step in range(6):", "keep = [g]\nfor step in range(6):"), SCALAR)


def test_a_tensor_comparison_is_no_few_valued_flag() -> None:
    text = GLOBAL_FLAG.replace("    USE_MASK = epoch % 2 == 1\n", "    USE_MASK = static_x.sum() > 0\n")
    found = _findings(text, BRANCH)
    assert all(_recapture(f) == [] for f in found)


# ---- the GPU cases (tests/gpu/frozen_state) on the CPU stand-in -------------------------------------------------
@pytest.mark.parametrize(("case", "rule", "fix_file"), [
    ("replay-frozen-python-scalar", SCALAR, "replay-frozen-python-scalar.fix0.py"),
    ("replay-frozen-branch--mode", BRANCH, "replay-frozen-branch--mode.fix0.1.py"),
])
def test_gpu_case_fix_file_is_current_and_replays_like_eager(case: str, rule: str, fix_file: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    text = (GPU / f"{case}.py").read_text()
    value = "i" if rule == SCALAR else "FLIP"
    fixed = _fixed(text, rule, value)
    assert (GPU / "fixes" / fix_file).read_text() == fixed, "rerun tests/gpu/frozen_state/run.py --write-fixes"
    scan = json.loads((GPU / "fixes" / "scan.json").read_text())[case]
    assert {"title": _recapture(_findings(text, rule)[0])[0].title, "file": fix_file} in scan["fixes"]
    assert scan["flagged"] and scan["twin_flagged"] == []
    assert _findings((GPU / f"{case}--clean.py").read_text(), rule) == []
    eager = _run(text, True, monkeypatch)
    assert _run(text, False, monkeypatch) != eager  # the stand-in shows the bug: the first pass's value is kept
    assert _run(fixed, False, monkeypatch) == eager
    assert _run((GPU / f"{case}--clean.py").read_text(), False, monkeypatch) == eager


PARAM = """\
import torch


def step(x, flag):
    if flag:
        return torch.flip(x, dims=[0])
    return x


def run(x, use_mask: bool):
    flag = False
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step(x, flag)
    for epoch in range(4):
        if epoch == 2:
            flag = use_mask
        g.replay()
    return out
"""


def test_a_bool_parameter_written_in_the_loop() -> None:
    out = _fixed(PARAM, BRANCH, "flag")
    assert "        if flag not in _graphs:\n" in out and "        g, out = _graphs[flag]\n        g.replay()\n" in out


def test_an_unannotated_parameter_may_be_anything() -> None:
    _no_recapture(PARAM.replace("use_mask: bool", "use_mask"), BRANCH)
