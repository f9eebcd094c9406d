"""`self` of a mixin passed on to the code that captures it: the object called is an instance of a workspace
subclass that defines `forward` (mamba's GenerationMixin.generate -> decode(x, self) -> capture_graph(model)
-> `model(...)`, issue 19's resolution oracle). One subclass of several: a may-be edge, never an error."""

from __future__ import annotations

from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace
from tests.source.helpers import workspace_flags

GENERATION = '''import torch


def capture_graph(model, x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(x)
    return g, out


def decode(x, model):
    return capture_graph(model, x)


class GenerationMixin:
    def generate(self, x):
        return decode(x, self)
'''

MODEL = '''import torch
from torch import nn

from generation import GenerationMixin


class LMHead(nn.Module, GenerationMixin):
    def forward(self, x):
        print(torch.ones(2, device="cuda"))
        return x
'''


def _findings() -> dict[tuple[str, int, str], str]:
    ws = Workspace([])
    ws.add_file("/w/generation.py", GENERATION)
    ws.add_file("/w/model.py", MODEL)
    found = analyse_workspace(ws, config=ScanConfig())
    return {(p.rsplit("/", 1)[-1], f.start_line + 1, f.rule): str(f.severity) for p, fs in found.items() for f in fs}


def test_a_subclass_forward_is_reached_through_the_mixins_self() -> None:
    got = _findings()
    assert got.get(("model.py", 9, "capture-print-tensor")) == "warning"


def test_a_mixin_whose_subclass_defines_no_forward_reaches_nothing() -> None:
    flags = workspace_flags({"generation.py": GENERATION, "model.py": MODEL.replace("def forward", "def step")})
    assert not {f for f in flags if f[0] == "model.py"}


def test_a_mixin_of_several_modules_says_nothing_of_which_one_is_called() -> None:
    other = MODEL.replace("class LMHead", "class Other").replace("print(torch.ones(2, device=\"cuda\"))", "pass")
    flags = workspace_flags({"generation.py": GENERATION, "model.py": MODEL, "other.py": other})
    assert not {f for f in flags if f[0] == "model.py"}
