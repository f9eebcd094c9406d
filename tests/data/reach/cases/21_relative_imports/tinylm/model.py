import torch
from torch import nn

from . import layers
from .layers import Block


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 1000, dim: int = 64, depth: int = 2) -> None:
        super().__init__()
        self.embed = layers.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        for blk in self.blocks:
            h = blk(h)
        return self.head(h)
