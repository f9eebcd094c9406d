"""Two classes with an `update` method: only the EMA is captured; the Monitor's update is eager-only."""

import torch


class EMA:
    def __init__(self, params: list[torch.Tensor], decay: float = 0.999) -> None:
        self.decay = decay
        self.shadow = [p.detach().clone() for p in params]

    def update(self, params: list[torch.Tensor]) -> None:
        torch._foreach_lerp_(self.shadow, [p.detach() for p in params], 1 - self.decay)


class Monitor:
    def __init__(self) -> None:
        self.history: list[float] = []

    def update(self, loss: torch.Tensor) -> None:
        self.history.append(loss.item())  # ok: capture-item-sync
        if len(self.history) % 100 == 0:
            torch.cuda.synchronize()  # ok: capture-explicit-sync


class Gauge:
    def step(self, value: torch.Tensor) -> None:
        print("gauge", value.cpu())  # ok: capture-host-copy  # ok: capture-print-tensor
