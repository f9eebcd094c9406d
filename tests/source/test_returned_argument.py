"""A function that returns its parameter returns, at each call, that call's argument (issue 19, reach: Megatron-LM's
`apply_module(self.mlp)(hidden)` in transformer_layer.py, 20 calls the oracle counted as `chained` misses: the union
over every caller of `apply_module` was more than a value set holds, so the call resolved to nothing)."""

from __future__ import annotations

from tests.source.helpers import workspace_flags

TYPED = '''def apply_module(m, *, check=True):
    if check and m is None:
        raise TypeError("no module")
    return m


def rebound(m):
    m = None
    return m
'''
LAYERS = '''import torch
from typed import apply_module, rebound


class Norm(torch.nn.Module):
    def forward(self, x):
        return x / x.norm().item()


class Mlp(torch.nn.Module):
    def forward(self, x):
        return x * float(x.max())


class Other(torch.nn.Module):
    def forward(self, x):
        return x


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = Norm()
        self.mlp = Mlp()
        OTHERS_INIT

    def forward(self, x):
        OTHERS_CALL  # nine other callers pass other modules: the union is past what a value set holds (MAX_VALUES)
        return apply_module(self.mlp)(apply_module(self.norm)(x))
'''.replace("OTHERS_INIT", "\n        ".join(f"self.o{i} = Other()" for i in range(9))).replace(
    "OTHERS_CALL", "\n        ".join(f"x = apply_module(Other())(x) if x is None else apply_module(self.o{i})(x)"
                                     for i in range(9)))
MAIN = '''import torch
from layers import Layer

layer = Layer().cuda()
x = torch.ones(4, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = layer(x)
g.replay()
'''


def _flagged(layers: str) -> set[tuple[str, int, str]]:
    return workspace_flags({"typed.py": TYPED, "layers.py": layers, "main.py": MAIN})


def test_a_returned_parameter_is_the_calls_own_argument() -> None:
    flagged = _flagged(LAYERS)
    assert ("layers.py", 7, "capture-item-sync") in flagged  # Norm.forward through apply_module(self.norm)
    assert ("layers.py", 12, "capture-item-sync") in flagged  # Mlp.forward through apply_module(self.mlp)


def test_a_rebound_parameter_is_not_the_argument() -> None:
    """`m = None` before `return m`: what is returned is not what was passed."""
    flagged = _flagged(LAYERS.replace("apply_module(self.mlp)(", "rebound(self.mlp)("))
    assert ("layers.py", 12, "capture-item-sync") not in flagged
    assert ("layers.py", 7, "capture-item-sync") in flagged
