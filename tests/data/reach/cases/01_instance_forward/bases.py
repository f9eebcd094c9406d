"""A small hierarchy: forward lives in the root, two levels above the class that is built."""

import torch
from torch import nn


class RootBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        stats = y.mean(dim=0).cpu()  # ruleid: capture-host-copy
        return y - stats.mean()


class MidBlock(RootBlock):
    def extra_repr(self) -> str:
        return "mid"


class LeafBlock(MidBlock):
    def reset(self) -> None:
        nn.init.zeros_(self.proj.bias)
