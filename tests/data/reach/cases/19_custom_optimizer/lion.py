"""A hand-written optimizer whose step reads the global gradient norm back to the host."""

from collections.abc import Callable, Iterable

import torch


class ClippedLion(torch.optim.Optimizer):
    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-4, max_norm: float = 1.0) -> None:
        super().__init__(params, {"lr": lr, "max_norm": max_norm})

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> None:
        for group in self.param_groups:
            grads = [p.grad for p in group["params"] if p.grad is not None]
            total = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))
            if total.item() > group["max_norm"]:  # ruleid: capture-item-sync
                for g in grads:
                    g.mul_(group["max_norm"] / total)
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(torch.sign(p.grad), alpha=-group["lr"])
