"""Links of real call chains that the new realistic programs (r17, r20, r21, r25) combine: tensors unpacked from a
method's returned tuple, values iterated through enumerate/zip, functions defined in a branch of the enclosing
function, and targets unpacked from a factory's returned tuple, each by its position."""

from __future__ import annotations

from tests.source.helpers import workspace_flags


def _flags(text: str) -> set[tuple[int, str]]:
    return {(line, rule) for _f, line, rule in workspace_flags({"main.py": text})}


HEAD = '''import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.qa = nn.Linear(4, 2)

    def project(self, h):
        return self.qa(h)

    def span(self, h):
        start, end = self.project(h).unbind(dim=-1)
        return start.masked_fill(start < 0, 0.0), end

    def forward(self, h):
        start, end = self.span(h)
        return self.prune(start)

    def prune(self, s):
        n = int((s > 0).sum())
        return s * n


head = Head().cuda()
x = torch.ones(4, 4, device="cuda")
head(x)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    head(x)
'''


def test_a_tensor_unpacked_from_a_methods_returned_tuple_is_a_tensor() -> None:
    # r17: `start, end = self.span_logits(h, allowed)` then `int((start_logits > t).sum())` one call down
    assert (22, "capture-item-sync") in _flags(HEAD)
    # a returned tuple with a non-tensor element says nothing of the element unpacked
    assert (22, "capture-item-sync") not in _flags(HEAD.replace("return start.masked_fill(start < 0, 0.0), end",
                                                                "return start.masked_fill(start < 0, 0.0), 3"))


BLOCKS = '''import torch
import torch.nn as nn


class Block(nn.Module):
    def forward(self, x):
        return torch.nonzero(x)


def build_blocks(n, arch):
    if arch == "a":
        def make():
            return Block()
    else:
        def make():
            return nn.Identity()
    return nn.ModuleList(make() for _ in range(n))


def graph_blocks(blocks):
    for i, block in {loop}:
        sample = torch.randn(4, device="cuda", requires_grad=True)
        blocks[i] = torch.cuda.make_graphed_callables(block, (sample,))


def main():
    graph_blocks(build_blocks(3, "a"))
'''


def test_enumerate_and_a_def_in_a_branch_of_the_factory_are_followed() -> None:
    # r21: `for i, block in enumerate(blocks)` over `nn.ModuleList(make() for ...)`, `make` defined per branch
    assert (7, "capture-dynamic-shape-op") in _flags(BLOCKS.format(loop="enumerate(blocks)"))
    assert (7, "capture-dynamic-shape-op") in _flags(BLOCKS.format(loop="zip(range(3), blocks)"))
    # a loop over something else reaches no block
    assert (7, "capture-dynamic-shape-op") not in _flags(BLOCKS.format(loop="enumerate([])"))


FACTORY = '''import torch


def build(w):
    opt = torch.optim.Adam([w], lr=0.1)
    return w, opt, None


w = torch.zeros(4, device="cuda", requires_grad=True)
{targets} = build(w)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    (w * 2).sum().backward()
    {stepped}.step()
'''


def test_a_target_unpacked_from_a_factorys_tuple_takes_the_element_at_its_position() -> None:
    # r20: `model, optimizer, scheduler = build_components(cfg)`; the optimizer is the second element
    assert (14, "optim-capturable-false") in _flags(FACTORY.format(targets="w2, opt, sched", stepped="opt"))
    # the first position holds the tensor, not the optimizer: its `.step` is nothing the rule knows
    assert (14, "optim-capturable-false") not in _flags(FACTORY.format(targets="opt, w2, sched", stepped="opt"))
