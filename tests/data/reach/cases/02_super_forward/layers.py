"""Layers that extend their parent's forward through super()."""

import torch
from torch import nn


class Norm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = x.pow(2).mean(-1, keepdim=True).sqrt()
        if bool(rms.min() == 0):  # ruleid: capture-item-sync
            rms = rms + 1e-6
        return x / rms * self.weight


class ScaledNorm(Norm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * 0.5


class Encoder(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        torch.cuda.synchronize()  # ruleid: capture-explicit-sync
        return h


class GatedEncoder(Encoder):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(super().forward(x)) * x


class DeepGatedEncoder(GatedEncoder):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + x
