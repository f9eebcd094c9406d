import torch
from torch import nn


class Embed(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        assert h.isfinite().all().item()  # ruleid: capture-item-sync
        return h


class Body(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.fc(x))
        norms = h.norm(dim=-1).cpu()  # ruleid: capture-host-copy
        return h / norms.mean()


class Tail(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        torch.cuda.synchronize()  # ruleid: capture-explicit-sync
        return y
