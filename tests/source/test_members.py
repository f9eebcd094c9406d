"""Static buffers held on the instance (source/capture/members.py): rebinding `self.x` or `self.bufs[k]` that a graph
kept on `self` captured, then replaying it, is reported with the `.copy_()` fix; setup, re-capture and
re-wrapping of the same storage are not."""

from __future__ import annotations

import pytest

from denpex.source import analyse_source, apply_fixes

HEAD = "import torch\n\n\nclass Runner:\n"
INIT = ("    def __init__(self, model):\n        self.model = model\n"
        "        self.static_x = torch.zeros(8, 16, device=\"cuda\")\n        self.graph = torch.cuda.CUDAGraph()\n"
        "        with torch.cuda.graph(self.graph):\n            self.static_y = self.model(self.static_x)\n\n")


def _rows(src: str) -> list[tuple[str, str, str]]:
    return [(f.rule, f.severity, src.splitlines()[f.start_line].strip()) for f in analyse_source(src, "m.py")]


@pytest.mark.parametrize("method,flagged", [
    ("    def run(self, x):\n        self.static_x = x\n        self.graph.replay()\n        return self.static_y\n",
     "self.static_x = x"),
    ("    def run(self, x):\n        for _ in range(2):\n            self.static_x = x * 2\n            self.graph.replay()\n",
     "self.static_x = x * 2"),
])
def test_rebinding_then_replay_is_reported(method: str, flagged: str) -> None:
    src = HEAD + INIT + method
    assert _rows(src) == [("replay-rebound-static-input", "error", flagged)]
    fixed = apply_fixes(src, analyse_source(src, "m.py"), unsafe=True)
    assert flagged.replace(" = ", ".copy_(", 1).replace("self.static_x.copy_(", "self.static_x.copy_(") + ")" in fixed
    assert _rows(fixed) == []


@pytest.mark.parametrize("method", [
    # no replay after it here: the order of methods is unknown (it may be setup before the capture)
    "    def set_input(self, x):\n        self.static_x = x\n",
    # the same storage re-wrapped
    "    def run(self, x):\n        self.static_x = self.static_x.view(8, 16)\n        self.graph.replay()\n",
    # a new capture follows
    "    def resize(self, n):\n        self.static_x = torch.zeros(n, 16, device=\"cuda\")\n"
    "        with torch.cuda.graph(self.graph):\n            self.static_y = self.model(self.static_x)\n"
    "        self.graph.replay()\n",
    # copying into it is the fix
    "    def run(self, x):\n        self.static_x.copy_(x)\n        self.graph.replay()\n",
    # an attribute the capture does not read
    "    def run(self, x):\n        self.other = x\n        self.graph.replay()\n",
    # the capture's output, not an input
    "    def run(self, x):\n        self.static_y = x\n        self.graph.replay()\n",
])
def test_not_a_rebinding_of_a_captured_input(method: str) -> None:
    assert _rows(HEAD + INIT + method) == []


def test_per_shape_dictionaries() -> None:
    src = ("import torch\n\n\nclass Runner:\n    def __init__(self, model):\n"
           "        self.graphs, self.inputs, self.outputs = {}, {}, {}\n        for bs in (4, 2):\n"
           "            self.inputs[bs] = torch.zeros(bs, 16, device=\"cuda\")\n            g = torch.cuda.CUDAGraph()\n"
           "            with torch.cuda.graph(g):\n                self.outputs[bs] = model(self.inputs[bs])\n"
           "            self.graphs[bs] = g\n\n    def run(self, x):\n        bs = x.shape[0]\n"
           "        self.inputs[bs] = x\n        self.graphs[bs].replay()\n        return self.outputs[bs]\n")
    assert _rows(src) == [("replay-rebound-static-input", "error", "self.inputs[bs] = x")]
    fixed = apply_fixes(src, analyse_source(src, "m.py"), unsafe=True)
    assert "        self.inputs[bs].copy_(x)\n" in fixed and _rows(fixed) == []


def test_graph_not_kept_on_the_instance_is_left_to_the_local_analysis() -> None:
    src = ("import torch\n\n\nclass Runner:\n    def __init__(self, model):\n"
           "        self.static_x = torch.zeros(8, 16, device=\"cuda\")\n        g = torch.cuda.CUDAGraph()\n"
           "        with torch.cuda.graph(g):\n            self.static_y = model(self.static_x)\n\n"
           "    def run(self, x):\n        self.static_x = x\n        self.graph.replay()\n")
    assert _rows(src) == []
