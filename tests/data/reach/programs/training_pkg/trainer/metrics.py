"""Running metrics kept by the trainer."""

import logging

import torch

log = logging.getLogger(__name__)


class Metrics:
    def __init__(self, every: int) -> None:
        self.every = every
        self.losses: list[float] = []

    def observe(self, loss: torch.Tensor) -> None:
        # kept on the device so it can run inside the captured step
        self.last = loss.detach()

    def record(self, loss: torch.Tensor) -> None:
        self.losses.append(loss.item())  # ok: capture-item-sync
        if len(self.losses) % self.every == 0:
            log.info("loss %.4f", sum(self.losses[-self.every:]) / self.every)


class GradMonitor:
    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model

    def check(self) -> torch.Tensor:
        norms = [p.grad.norm() for p in self.model.parameters() if p.grad is not None]
        total = torch.stack(norms).norm()
        self.last_norm = total.to("cpu")  # ruleid: capture-host-copy
        if not torch.isfinite(total).item():  # ruleid: capture-item-sync
            log.warning("non-finite gradient norm")  # ruleid: replay-python-side-effects
        return total
