"""The train step as a free function; the trainer binds model and options with functools.partial."""

import torch
from torch import nn


def train_step(model: nn.Module, batch: torch.Tensor, *, clip: float) -> torch.Tensor:
    loss = model(batch).pow(2).mean()
    loss.backward()
    gnorm = nn.utils.clip_grad_norm_(model.parameters(), clip)
    if gnorm.item() > 10 * clip:  # ruleid: capture-item-sync
        loss = loss * 0
    return loss
