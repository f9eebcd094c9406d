"""The model: a plain nn.Module whose forward reads a scalar back to the host."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.fc(x))
        scale = y.abs().max().item()  # ruleid: capture-item-sync
        return y / scale
