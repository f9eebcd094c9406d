"""A plain class (not an nn.Module) made callable with __call__; its forward is never the call target."""

import torch


class LossScaler:
    def __init__(self, init_scale: float = 2.0**16) -> None:
        self.scale = torch.tensor(init_scale, device="cuda")

    def __call__(self, loss: torch.Tensor) -> torch.Tensor:
        if loss.isnan().any().item():  # ruleid: capture-item-sync
            self.scale.mul_(0.5)
        return loss * self.scale

    def forward(self, loss: torch.Tensor) -> torch.Tensor:
        return loss * self.scale.cpu()  # ok: capture-host-copy
