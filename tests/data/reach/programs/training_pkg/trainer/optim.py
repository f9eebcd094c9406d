"""Optimizer construction: weight decay on matrices only, like most GPT trainers."""

import logging

import torch
from torch import nn

log = logging.getLogger(__name__)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, object]]:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, lr: float, weight_decay: float = 0.1) -> torch.optim.Optimizer:
    groups = param_groups(model, weight_decay)
    log.info("optimizer: AdamW lr=%g, %d decayed tensors", lr, len(groups[0]["params"]))  # type: ignore[arg-type]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), foreach=True)
