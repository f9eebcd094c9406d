"""Two bodies; a Stage wraps whichever body it is given."""

import torch
from torch import nn


class FastBody(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return y * y.amax().item()  # ruleid: capture-item-sync


class SlowBody(nn.Module):
    """Only used on the eager debug path: host reads are fine here."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        torch.cuda.synchronize()  # ok: capture-explicit-sync
        return y / y.abs().max().item()  # ok: capture-item-sync


class Reporter:
    def report(self, x: torch.Tensor) -> None:
        del x


class ConsoleReporter(Reporter):
    def report(self, x: torch.Tensor) -> None:
        print("stats", x.mean().item())  # ok: capture-item-sync  # ok: capture-print-tensor  # ok: replay-python-side-effects


class Stage(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body
        self.reporter = Reporter()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        self.reporter.report(y)
        return y
