"""Optimizer factory: AdamW without capturable (it defaults to False)."""

import torch
from torch import nn


def build_optimizer(model: nn.Module, lr: float = 3e-4) -> torch.optim.Optimizer:
    decay = [p for n, p in model.named_parameters() if not n.endswith("bias")]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )
