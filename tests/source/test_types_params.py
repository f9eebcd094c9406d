"""Types through parameters and branches (issue 19, "Reach and types"): a parameter stored on `self` in
`__init__` and read in another method is typed from every construction in the workspace, through any number of
constructor hops (Values.parameter_kind); a name bound in the arms of an if/else is the union of the arms, a
may-be value; an `args.device` whose argparse option defaults to "cuda" is a CUDA device."""

from __future__ import annotations

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace

LAYERS = """import torch


class Noise(torch.nn.Module):
    def __init__(self, p, generator=None):
        super().__init__()
        self.p = p
        self.generator = generator

    def forward(self, x):
        return x * torch.rand(x.shape, device=x.device, generator=self.generator)


class Block(torch.nn.Module):
    def __init__(self, dim, generator=None):
        super().__init__()
        self.fc = torch.nn.Linear(dim, dim)
        self.noise = Noise(0.1, generator)

    def forward(self, x):
        return self.noise(self.fc(x))


class Net(torch.nn.Module):
    def __init__(self, dim, depth, generator=None):
        super().__init__()
        self.blocks = torch.nn.Sequential(*[Block(dim, generator=generator) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(x)
"""

MAIN = """import argparse

import torch
from layers import Net


def get_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=DEFAULT)
    return ap.parse_args()


def main():
    args = get_args()
    device = torch.device(args.device)
    gen = torch.Generator(device=device)
    model = Net(64, 3, generator=gen).to(device)
    x = torch.randn(8, 64, device=device)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        model(x)
    step = torch.cuda.make_graphed_callables(model, (x,))
    step(x)
"""


def _ws(files: dict[str, str]) -> Workspace:
    ws = Workspace()
    for path, text in files.items():
        ws.add_text(path, text)
    return ws


def _flagged(ws: Workspace) -> list[tuple[str, int, str, str]]:
    out = []
    for path, found in analyse_workspace(ws).items():
        out += [(path, f.start_line + 1, f.code, f.severity) for f in found]
    return sorted(out)


def _generator_findings(default: str) -> list[tuple[str, int, str, str]]:
    ws = _ws({"layers.py": LAYERS, "main.py": MAIN.replace("DEFAULT", default)})
    return [f for f in _flagged(ws) if f[0] == "layers.py" and f[1] == 11]


def test_a_generator_three_constructors_up_is_typed_at_its_use() -> None:
    # Net(generator=gen) -> Block(generator=generator) -> Noise(0.1, generator) -> self.generator in forward
    found = _generator_findings('"cuda"')
    assert [(f[2], f[3]) for f in found] == [("DPX400", "error")], found


def test_an_option_defaulting_to_cpu_gives_a_cpu_generator() -> None:
    assert _generator_findings('"cpu"') == []


def test_a_generator_nobody_passes_stays_unknown() -> None:
    ws = _ws({"layers.py": LAYERS, "main.py": MAIN.replace("DEFAULT", '"cuda"').replace(", generator=gen", "")})
    assert [f for f in _flagged(ws) if f[0] == "layers.py" and f[1] == 11] == []


FACTORY = """import torch


class A(torch.nn.Module):
    def forward(self, x):
        return x.nonzero()


class B(torch.nn.Module):
    def forward(self, x):
        return x.sum().item()


def make(kind):
    if kind == "a":
        m = A()
    else:
        m = B()
    return m
"""

CAPTURE = """import sys

import torch
from models import make

model = make(sys.argv[1])
x = torch.ones(3, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    model(x)
"""


def test_a_name_bound_in_both_arms_is_either_class() -> None:
    # the last arm alone (B) was taken before, as a certain value; either arm may run: both, as may-be findings
    found = [f for f in _flagged(_ws({"models.py": FACTORY, "main.py": CAPTURE})) if f[0] == "models.py"]
    assert [(f[1], f[3]) for f in found] == [(6, "warning"), (11, "warning")], found


def test_an_arm_decided_by_the_argument_is_the_only_value() -> None:
    # make("a"): `kind == "a"` holds, so only A's forward runs, as a certain value
    text = CAPTURE.replace("make(sys.argv[1])", 'make("a")')
    found = [f for f in _flagged(_ws({"models.py": FACTORY, "main.py": text})) if f[0] == "models.py"]
    assert [(f[1], f[3]) for f in found] == [(6, "error")], found


def test_a_binding_after_the_branch_wins() -> None:
    text = FACTORY.replace("    return m\n", "    m = A()\n    return m\n")
    found = [f for f in _flagged(_ws({"models.py": text, "main.py": CAPTURE})) if f[0] == "models.py"]
    assert [(f[1], f[3]) for f in found] == [(6, "error")], found


OPTIM = """import torch


def build_optimizer(params, name="adam", lr=1e-3):
    if name == "adam":
        opt = torch.optim.Adam(params, lr=lr)
    elif name == "sgd":
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    else:
        raise ValueError(name)
    return opt
"""

TRAIN = """import argparse

import torch
from optim import build_optimizer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--optimizer", default=DEFAULT)
    args = ap.parse_args()
    model = torch.nn.Linear(4, 4).cuda()
    opt = build_optimizer(model.parameters(), args.optimizer.lower())
    x = torch.ones(2, 4, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x).sum().backward()
        opt.step()
"""



def test_a_factory_arm_is_decided_by_the_option_default() -> None:
    # --optimizer defaults to "Adam" (lowered): the Adam arm runs, built without capturable=True
    ws = _ws({"optim.py": OPTIM, "train.py": TRAIN.replace("DEFAULT", '"Adam"')})
    got = [f for f in _flagged(ws) if f[0] == "train.py" and f[1] == 17]
    assert got and got[0][3] == "error", _flagged(ws)


def test_the_other_arm_taken_by_default_gives_nothing() -> None:
    # default "sgd": the SGD arm runs (no capturable check); the Adam arm is not the one the program takes
    ws = _ws({"optim.py": OPTIM, "train.py": TRAIN.replace("DEFAULT", '"sgd"')})
    assert [f for f in _flagged(ws) if f[0] == "train.py" and f[1] == 17] == []


OPTIM_METHOD = """import torch


class Builder:
    def build(self, params, args):
        if args.optimizer == "adam":
            opt = torch.optim.Adam(params, lr=1e-3)
        elif args.optimizer == "sgd":
            opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
        else:
            raise ValueError(args.optimizer)
        return opt
"""

TRAIN_METHOD = TRAIN.replace("from optim import build_optimizer", "from optim import Builder").replace(
    "build_optimizer(model.parameters(), args.optimizer.lower())", "Builder().build(model.parameters(), args)")


def test_a_method_parameter_holding_the_namespace_is_followed_to_its_callers() -> None:
    # the receiver `self` is never a parsed namespace and is not followed; the method's other parameters are
    flagged = {d: [f for f in _flagged(_ws({"optim.py": OPTIM_METHOD, "train.py": TRAIN_METHOD.replace("DEFAULT", d)}))
                   if f[0] == "train.py" and f[1] == 17] for d in ('"adam"', '"sgd"')}
    assert flagged['"adam"'] and flagged['"adam"'][0][3] == "error", flagged
    assert flagged['"sgd"'] == [], flagged


def test_the_receiver_of_a_method_is_its_first_parameter_unless_static() -> None:
    from denpex.source.resolve.consts import _receiver
    ws = _ws({"m.py": "class C:\n    def m(self, a):\n        pass\n\n    @staticmethod\n    def s(a, b):\n"
                      "        pass\n\n    @classmethod\n    def k(cls, a):\n        pass\n\n\ndef f(self, a):\n"
                      "    pass\n"})
    ix = ws.index("m.py")
    assert ix is not None
    fns = {fn.name: fn for fn in ix.by_node.values()}
    got = {(n, p): _receiver(fns[n], p) for n, p in (("m", "self"), ("m", "a"), ("s", "a"), ("k", "cls"),
                                                    ("f", "self"))}
    assert got == {("m", "self"): True, ("m", "a"): False, ("s", "a"): False, ("k", "cls"): True,
                   ("f", "self"): False}
