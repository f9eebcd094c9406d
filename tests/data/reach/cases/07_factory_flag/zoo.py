"""Two model classes a factory chooses between, and a third the factory never returns."""

import torch
from torch import nn


class SmallNet(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return y / y.sum().item()  # ruleid: capture-item-sync


class LargeNet(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        print(h.mean())  # ruleid: capture-print-tensor
        return self.fc2(h)


class DebugNet(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        y_host = y.cpu()  # ok: capture-host-copy
        return y_host.cuda()  # ok: capture-host-copy
