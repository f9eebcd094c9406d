"""Tracks the residual gains so the dashboard can show them per layer."""

import torch


class GainMonitor:
    def __init__(self, max_gain: float) -> None:
        self.max_gain = max_gain
        self.last_peak = 0.0

    def clamped(self, gain: torch.Tensor) -> torch.Tensor:
        self.last_peak = gain.detach().abs().max().item()  # ruleid: capture-item-sync
        return gain.clamp(-self.max_gain, self.max_gain)
