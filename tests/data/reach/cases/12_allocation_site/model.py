import torch
from parts import ConsoleReporter, FastBody, SlowBody, Stage
from torch import nn


class TwoPath(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fast = Stage(FastBody(dim))
        self.slow = Stage(SlowBody(dim))
        self.slow.reporter = ConsoleReporter()

    def fast_path(self, x: torch.Tensor) -> torch.Tensor:
        return self.fast(x)

    def slow_path(self, x: torch.Tensor) -> torch.Tensor:
        return self.slow(x)
