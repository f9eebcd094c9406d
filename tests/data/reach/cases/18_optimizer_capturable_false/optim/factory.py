"""Two factories: one says capturable=False outright, the other asks for a capturable optimizer."""

import torch
from torch import nn


def build_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=lr, capturable=False, foreach=True)


def build_capturable_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=torch.tensor(lr, device="cuda"), capturable=True)
