"""replay-frozen-branch (DPX310)'s code fix: the flag becomes a 0-dim device tensor the graph reads
(`torch.where(flag_t, a, b)`, `flag_t.fill_(flag)` after every host write), offered only for the narrow shape of
rules/_frozen_branch_fix.py; anything else keeps the prose fix alone.

Each fixed program must parse and no longer be flagged; the runnable ones are also run on the CPU with a stand-in
CUDA graph that records the aten ops of the capture and runs them again on replay (what a CUDA graph does: the
Python of the capture runs once, the recorded kernels read the tensors' current contents): the original replays
the captured branch (its RESULT differs from eager), the fixed program matches eager."""

from __future__ import annotations

import ast
import contextlib
import io
import textwrap
from pathlib import Path
from typing import Any

import pytest

from denpex.source import analyse_source
from denpex.source.engine.analyse import apply_edits
from denpex.source.model import SourceFinding

REPO = Path(__file__).resolve().parents[2]
GPU_CASE = REPO / "tests" / "gpu" / "frozen_state" / "replay-frozen-branch.py"
GPU_FIX = REPO / "tests" / "gpu" / "frozen_state" / "fixes" / "replay-frozen-branch.fix0.py"
RULE = "replay-frozen-branch"
TITLE = "Device flag: keep it in a 0-dim device tensor (fill_() it where it is set) and select with torch.where"


def _flagged(text: str) -> list[SourceFinding]:
    return [f for f in analyse_source(text, "case.py") if f.rule == RULE]


def _fixed(text: str) -> str:
    """The program after the rule's one code fix; it parses and is no longer flagged."""
    found = _flagged(text)
    assert len(found) == 1, found
    fixes = [fx for fx in found[0].fixes if fx.title == TITLE]
    assert len(fixes) == 1, [fx.title for fx in found[0].fixes]
    assert fixes[0].safety == "unsafe"
    out: str = apply_edits(text, fixes[0].edits)
    ast.parse(out)
    assert _flagged(out) == []
    return out


def _no_code_fix(text: str) -> None:
    found = _flagged(textwrap.dedent(text))
    assert found, "the case must still be flagged"
    assert [fx.title for f in found for fx in f.fixes if fx.title == TITLE] == []


# ---- a CPU stand-in for a CUDA graph ---------------------------------------------------------------------------
def _run(text: str, eager: bool, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Run a program on the CPU: `torch.cuda.graph(g)` records the aten ops its block runs, `g.replay()` runs
    them again on the same tensors and copies each result into the tensor the capture produced."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Graph:
        def __init__(self) -> None:
            self.ops: list[tuple[Any, Any, Any, Any]] = []

        def replay(self) -> None:
            for func, args, kwargs, out in self.ops:
                new = func(*args, **kwargs)
                for o, n in zip(tree_leaves(out), tree_leaves(new), strict=True):
                    if isinstance(o, torch.Tensor) and o is not n:
                        o.copy_(n)

    class Record(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __init__(self, g: Graph) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.g = g

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            self.g.ops.append((func, args, kwargs or {}, out))
            return out

    @contextlib.contextmanager
    def graph(g: Graph) -> Any:
        with Record(g):
            yield

    monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    monkeypatch.setenv("DENPEX_EAGER", "1" if eager else "0")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(text.replace('device="cuda"', 'device="cpu"'), "case.py", "exec"), {"__name__": "__main__"})
    rows = [ln for ln in buf.getvalue().splitlines() if ln.startswith("RESULT:")]
    assert rows, buf.getvalue()
    return [round(float(v), 3) for v in rows[-1].split()[1:]]


def _replays_like_eager(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fixed = _fixed(text)
    eager = _run(text, True, monkeypatch)
    assert _run(text, False, monkeypatch) != eager  # the stand-in shows the bug: the captured branch is kept
    assert _run(fixed, True, monkeypatch) == eager
    assert _run(fixed, False, monkeypatch) == eager


# ---- the shape: fixed --------------------------------------------------------------------------------------------
def test_gpu_case_attribute_set_in_the_constructor_and_flipped_by_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    text = GPU_CASE.read_text()
    fixed = _fixed(text)
    assert '        self.scale_up_t = torch.tensor(True, device="cuda")\n' in fixed
    assert "        h = torch.where(self.scale_up_t, h * 2, h)\n" in fixed
    assert "        if self.scale_up:" not in fixed
    # both loops (eager and replayed) refresh the tensor right after the host write
    assert fixed.count("model.scale_up = epoch < 2\n            model.scale_up_t.fill_(model.scale_up)\n") == 2
    assert GPU_FIX.read_text() == fixed, "rerun tests/gpu/frozen_state/run.py --write-fixes"
    _replays_like_eager(text, monkeypatch)


GLOBAL = """\
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(8, 8).cuda()
USE_MASK = True


def step(x):
    h = lin(x)
    if USE_MASK:  # BRANCH
        return h * 2
    return h - 1


def reset():
    global USE_MASK
    USE_MASK = True


static_x = torch.randn(4, 8, device="cuda")
sums = []
with torch.no_grad():
    if os.environ.get("DENPEX_EAGER") == "1":
        for i in range(4):
            USE_MASK = i % 2 == 1
            sums.append(step(static_x).sum().item())
    else:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(static_x)
        for i in range(4):
            USE_MASK = i % 2 == 1
            g.replay()
            sums.append(out.sum().item())
reset()
print("RESULT:", *sums)
"""


def test_module_global_read_by_a_captured_function_return_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    fixed = _fixed(GLOBAL)
    assert 'USE_MASK = True\nUSE_MASK_t = torch.tensor(True, device="cuda")\n' in fixed
    assert "    return torch.where(USE_MASK_t, h * 2, h - 1)  # BRANCH\n\n" in fixed
    assert "    USE_MASK = True\n    USE_MASK_t.fill_(True)\n" in fixed  # the `global` write of reset()
    assert fixed.count("USE_MASK_t.fill_(USE_MASK)") == 2
    _replays_like_eager(GLOBAL, monkeypatch)


SETTER = """\
import os

import torch

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.monitor = False

    def enable_monitor(self, flag=True):
        self.monitor = flag

    def forward(self, x):
        h = self.lin(x)
        if self.monitor:  # BRANCH
            h = h * 1.5
        return h


net = Net().cuda()
static_x = torch.randn(4, 8, device="cuda")
sums = []
with torch.no_grad():
    if os.environ.get("DENPEX_EAGER") == "1":
        for i in range(4):
            net.enable_monitor(i % 2 == 0)
            sums.append(net(static_x).sum().item())
    else:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = net(static_x)
        for i in range(4):
            net.enable_monitor(i % 2 == 0)
            g.replay()
            sums.append(out.sum().item())
print("RESULT:", *sums)
"""


def test_attribute_flipped_by_a_setter_method_called_in_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    fixed = _fixed(SETTER)
    assert '        self.monitor = False\n        self.monitor_t = torch.tensor(False, device="cuda")\n' in fixed
    # the setter's value is any Python value: its truth, as `if self.monitor:` read it
    assert "        self.monitor = flag\n        self.monitor_t.fill_(bool(self.monitor))\n" in fixed
    assert "        h = torch.where(self.monitor_t, h * 1.5, h)  # BRANCH\n" in fixed
    _replays_like_eager(SETTER, monkeypatch)


LOCAL = """\
import os

import torch


def main():
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).cuda()
    static_x = torch.randn(4, 8, device="cuda")
    plain = True
    sums = []
    with torch.no_grad():
        if os.environ.get("DENPEX_EAGER") == "1":
            for i in range(4):
                plain = i < 2
                h = lin(static_x)
                y = h + 1 if plain else h * 3
                sums.append(y.sum().item())
        else:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                h = lin(static_x)
                if not plain:  # BRANCH
                    y = h * 3
                else:
                    y = h + 1
            for i in range(4):
                plain = i < 2
                g.replay()
                sums.append(y.sum().item())
    print("RESULT:", *sums)


main()
"""


def test_local_of_the_capture_scope_negated_with_an_else(monkeypatch: pytest.MonkeyPatch) -> None:
    fixed = _fixed(LOCAL)
    assert '    plain = True\n    plain_t = torch.tensor(True, device="cuda")\n' in fixed
    assert "                y = torch.where(plain_t, h + 1, h * 3)  # BRANCH\n" in fixed  # `not`: sides swapped
    assert fixed.count("plain = i < 2\n") == fixed.count("plain_t.fill_(plain)\n") == 2
    _replays_like_eager(LOCAL, monkeypatch)


# ---- outside the shape: flagged, no code fix -----------------------------------------------------------------------
def test_no_fix_for_a_branch_of_two_statements() -> None:
    _no_code_fix(SETTER.replace("            h = h * 1.5\n", "            h = h * 1.5\n            h = h + 1\n"))


def test_no_fix_for_in_place_or_reducing_work_in_the_branch() -> None:
    _no_code_fix(SETTER.replace("            h = h * 1.5\n", "            h = h.mul_(1.5)\n"))
    _no_code_fix(SETTER.replace("            h = h * 1.5\n", "            h = h.sum(0)\n"))


def test_no_fix_for_a_condition_that_is_not_the_bare_flag() -> None:
    _no_code_fix(SETTER.replace("        if self.monitor:  # BRANCH\n", "        if self.monitor and x.shape[0] > 1:\n"))
    _no_code_fix(SETTER.replace("        if self.monitor:  # BRANCH\n", "        if self.monitor == 1:\n"))


def test_no_fix_for_a_write_on_an_object_it_cannot_tell() -> None:
    # `nets[0]` is a Net, but the fix could not follow every object that holds one
    text = SETTER.replace("            net.enable_monitor(i % 2 == 0)\n            g.replay()",
                          "            nets[0].monitor = i % 2 == 0\n            g.replay()").replace(
        "net = Net().cuda()\n", "net = Net().cuda()\nnets = [net]\n")
    assert text != SETTER
    _no_code_fix(text)


def test_no_fix_when_the_flag_is_not_set_in_the_constructor_body() -> None:
    text = SETTER.replace("        self.monitor = False\n", "        if True:\n            self.monitor = False\n")
    assert text != SETTER
    _no_code_fix(text)


PARAM = """\
import os

import torch


def step(lin, x, double):
    h = lin(x) + 1
    if double:  # BRANCH
        h = h * 2
    return h


def main():
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).cuda()
    static_x = torch.randn(4, 8, device="cuda")
    double = True
    sums = []
    with torch.no_grad():
        if os.environ.get("DENPEX_EAGER") == "1":
            for i in range(4):
                double = i >= 2
                h = lin(static_x) + 1
                sums.append((h * 2 if double else h).sum().item())
        else:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = step(lin, static_x, double)
            for i in range(4):
                double = i >= 2
                g.replay()
                sums.append(out.sum().item())
    print("RESULT:", *sums)


main()
"""


def test_parameter_bound_by_its_only_call_to_a_name_the_loop_rebinds(monkeypatch: pytest.MonkeyPatch) -> None:
    fixed = _fixed(PARAM)
    assert '    double = True\n    double_t = torch.tensor(True, device="cuda")\n' in fixed
    assert "                out = step(lin, static_x, double_t)\n" in fixed
    assert "    h = torch.where(double, h * 2, h)  # BRANCH\n" in fixed  # the parameter is now the tensor
    assert fixed.count("double_t.fill_(double)\n") == 2
    _replays_like_eager(PARAM, monkeypatch)


def test_no_fix_for_a_parameter_other_calls_pass_or_the_function_reads_again() -> None:
    # a warm-up call passes the Python bool: torch.where would get a bool where the capture passes the tensor
    warm = PARAM.replace("            g = torch.cuda.CUDAGraph()\n",
                         "            step(lin, static_x, double)\n            g = torch.cuda.CUDAGraph()\n")
    assert warm != PARAM
    _no_code_fix(warm)
    reads = PARAM.replace("    h = lin(x) + 1\n", "    h = lin(x) + (2 if double else 1)\n")
    assert reads != PARAM
    _no_code_fix(reads)


def test_no_fix_for_a_config_object_attribute() -> None:
    _no_code_fix("""
        import torch

        class Block(torch.nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)
                self.cfg = cfg

            def forward(self, x):
                h = self.lin(x)
                if self.cfg.residual:
                    h = h + x
                return h

        class Cfg:
            residual = True

        cfg = Cfg()
        block = Block(cfg).cuda()
        x = torch.randn(4, 8, device="cuda", requires_grad=True)
        graphed = torch.cuda.make_graphed_callables(block, (x,))
        for step in range(10):
            cfg.residual = step < 5
            y = graphed(x)
    """)


def test_no_fix_when_another_file_writes_the_flag() -> None:
    from denpex.source.engine.analyse import analyse_workspace
    from denpex.source.resolve.workspace import Workspace

    ws = Workspace()
    ws.add_text("model.py", SETTER.split("\n\nnet = Net()")[0] + "\n")
    ws.add_text("main.py", textwrap.dedent("""
        import torch
        from model import Net
        net = Net().cuda()
        static_x = torch.randn(4, 8, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = net(static_x)
        for i in range(4):
            net.monitor = i % 2 == 0
            g.replay()
    """))
    found = [f for fs in analyse_workspace(ws).values() for f in fs if f.rule == RULE]
    assert found
    assert [fx for f in found for fx in f.fixes if fx.title == TITLE] == []


def test_same_attribute_of_an_unrelated_class_is_left_alone() -> None:
    text = SETTER.replace("\n\nnet = Net().cuda()\n", "\n\nclass Meter:\n    def __init__(self):\n"
                          "        self.monitor = 0\n\n    def tick(self):\n        self.monitor += 1\n\n\n"
                          "net = Net().cuda()\n")
    assert text != SETTER
    fixed = _fixed(text)
    assert "        self.monitor = 0\n\n    def tick(self):\n        self.monitor += 1\n\n" in fixed
    assert fixed.count(".fill_(") == 1  # only Net's setter


def test_no_fix_when_a_write_runs_while_capturing() -> None:
    # a fill_() there would be recorded, and every replay would reset the tensor to the value at capture
    helper = SETTER.replace("        h = self.lin(x)\n        if self.monitor:",
                            "        self.enable_monitor(True)\n        h = self.lin(x)\n        if self.monitor:")
    assert helper != SETTER
    _no_code_fix(helper)
    in_block = SETTER.replace("        with torch.cuda.graph(g):\n            out = net(static_x)",
                              "        with torch.cuda.graph(g):\n            net.monitor = True\n"
                              "            out = net(static_x)")
    assert in_block != SETTER
    _no_code_fix(in_block)


def test_no_fix_in_a_file_without_torch_bound() -> None:
    files = {
        "model.py": """
            import torch.nn as nn
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(4, 4)
                    self.monitor = False
                def enable_monitor(self, flag):
                    self.monitor = flag
                def forward(self, x):
                    h = self.lin(x)
                    if self.monitor:
                        h = h * 2
                    return h
        """,
        "main.py": """
            import torch
            from model import Net
            net = Net().cuda()
            static_x = torch.randn(4, 4, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = net(static_x)
            for i in range(4):
                net.enable_monitor(i % 2 == 0)
                g.replay()
        """,
    }
    from denpex.source.engine.analyse import analyse_workspace
    from denpex.source.resolve.workspace import Workspace

    def offered(model: str) -> list[str]:
        ws = Workspace()
        ws.add_text("model.py", textwrap.dedent(model))
        ws.add_text("main.py", textwrap.dedent(files["main.py"]))
        found = [f for fs in analyse_workspace(ws).values() for f in fs if f.rule == RULE]
        assert found
        return [fx.title for f in found for fx in f.fixes if fx.title == TITLE]

    assert offered(files["model.py"]) == []
    # the same model file binding `torch`: the fix lands in model.py, where every write is
    assert offered(files["model.py"].replace("import torch.nn as nn", "import torch\n            import torch.nn as nn")) \
        == [TITLE]


def test_realistic_gradual_unfreeze_keeps_the_prose_fix_only() -> None:
    # r06: the branch is in model_ft.py, the epoch loop writes the flag in finetune.py: one file cannot hold the fix
    from denpex.source.engine.analyse import analyse_workspace
    from denpex.source.resolve.workspace import Workspace

    ws = Workspace()
    for p in sorted((REPO / "tests" / "data" / "realistic" / "programs_new" / "r06_gradual_unfreeze").glob("*.py")):
        ws.add_text(str(p), p.read_text())
    found = [(Path(p).name, f) for p, fs in analyse_workspace(ws).items() for f in fs if f.rule == RULE]
    assert [(n, f.start_line + 1) for n, f in found] == [("model_ft.py", 26)]
    assert [fx.title for _n, f in found for fx in f.fixes if fx.title == TITLE] == []
