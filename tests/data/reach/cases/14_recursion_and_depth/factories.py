"""Mutually recursive builders (a tree of blocks); the recursion must terminate in the resolver."""

import torch
from torch import nn


class Leaf(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.cuda.synchronize()  # ruleid: capture-explicit-sync
        return x


class Branch(nn.Module):
    def __init__(self, left: nn.Module, right: nn.Module) -> None:
        super().__init__()
        self.left = left
        self.right = right

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.left(x) + self.right(x)


def make_branch(depth: int) -> nn.Module:
    return Branch(make_tree(depth - 1), make_tree(depth - 1))


def make_tree(depth: int) -> nn.Module:
    if depth <= 0:
        return Leaf()
    return make_branch(depth)
