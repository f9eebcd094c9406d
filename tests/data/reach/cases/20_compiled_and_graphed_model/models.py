import torch
from prep import normalise_
from torch import nn


class Decoder(nn.Module):
    """Compiled with mode="reduce-overhead": dynamo breaks the graph at .item() and runs it eagerly between the two
    cudagraphed halves (H200, torch 2.11: correct results, no capture error), so the .item() is no capture hazard;
    the in-place write into the compiled function's input makes Inductor skip CUDA graphs."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = normalise_(x)
        h = self.fc(x)
        denom = h.abs().sum().item()  # ok: capture-item-sync
        return h / denom


class Critic(nn.Module):
    """Graphed with make_graphed_callables: its forward is captured by torch.cuda.graph."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.fc(x)
        return v - v.mean().item()  # ruleid: capture-item-sync


class Eager(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(normalise_(x))  # ok: compile-skip-cudagraphs
        return y * y.mean().item()  # ok: capture-item-sync
