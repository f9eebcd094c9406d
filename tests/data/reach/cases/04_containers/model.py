"""A model whose sub-modules live in ModuleList, ModuleDict and Sequential containers."""

import torch
from blocks import Adapter, Expert, Gate, Head, MLPBlock, Stem
from torch import nn


class Tower(nn.Module):
    def __init__(self, dim: int, depth: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(Stem(dim), Gate())
        self.blocks = nn.ModuleList([MLPBlock(dim) for _ in range(depth)])
        self.blocks.append(Head(dim))
        self.adapters = nn.ModuleList()
        for _ in range(2):
            self.adapters.append(Adapter(dim))
        self.experts = nn.ModuleDict({"a": Expert(dim), "b": Expert(dim)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for block in self.blocks[:-1]:
            h = block(h)
        for adapter in self.adapters:
            h = adapter(h)
        for expert in self.experts.values():
            h = h + expert(h)
        return self.blocks[-1](h)
