"""Sub-modules held as attributes of the top-level model."""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        n_pos = int((h > 0).sum())  # ruleid: capture-item-sync
        return h * n_pos


class Decoder(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.out = nn.Linear(dim, dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        y = self.out(h)
        print("decoder out", y)  # ruleid: capture-print-tensor
        return y
