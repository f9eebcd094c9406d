import torch
from telemetry import Telemetry
from torch import nn


class Net(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.telemetry = Telemetry()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        # y.item() here would sync; this comment is not code  # ok: capture-item-sync
        self.telemetry.record(y.sum())
        self.telemetry.flush(y)
        return y
