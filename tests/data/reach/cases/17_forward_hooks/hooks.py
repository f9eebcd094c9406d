"""Activation-statistics hooks, registered on the model from the training script."""

import logging

import torch
from torch import nn

log = logging.getLogger(__name__)


def check_inputs(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
    (x,) = args
    if torch.isnan(x).any().item():  # ruleid: capture-item-sync
        raise FloatingPointError(f"NaN input to {module.__class__.__name__}")


def log_activations(module: nn.Module, args: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
    log.info("activation %s", output.abs().mean())  # ruleid: capture-print-tensor


def unused_hook(module: nn.Module, args: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
    print(output.cpu())  # ok: capture-host-copy  # ok: capture-print-tensor
