import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.attn = nn.Linear(dim, dim)
        self.mlp = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn(x)
        if h.max() > 1e4:  # ruleid: capture-implicit-bool
            h = h.clamp(max=1e4)
        return h + self.mlp(h)


class Embedding(nn.Module):
    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab, dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n_unique = len(ids.unique())  # ruleid: capture-dynamic-shape-op
        return self.table(ids) * (n_unique > 0)
