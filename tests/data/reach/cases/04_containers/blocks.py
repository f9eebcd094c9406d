"""Block types kept in containers by the model."""

import torch
from torch import nn


class MLPBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        active = h.gt(0).sum().item()  # ruleid: capture-item-sync
        return h * (active > 0)


class Head(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.fc(x)
        host_logits = logits.detach().cpu()  # ruleid: capture-host-copy
        return logits + host_logits.mean()


class Adapter(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.down = nn.Linear(dim, dim // 2)
        self.up = nn.Linear(dim // 2, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.cuda.current_stream().synchronize()  # ruleid: capture-explicit-sync
        return x + self.up(self.down(x))


class Expert(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return y * float(y.norm())  # ruleid: capture-item-sync


class Gate(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


class Stem(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        peak = y.max().tolist()  # ruleid: capture-host-copy
        return y / peak
