from typing import Any

import torch


class DistributedOptimizer:
    """Plain wrapper around a torch optimizer with the (success, grad_norm, zeros) step contract."""

    def __init__(
        self, optimizer: torch.optim.Optimizer, clip_grad: float = 1.0, **kwargs: Any
    ) -> None:
        self.optimizer = optimizer
        self.clip_grad = clip_grad

    def step(self):
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        grad_norm = torch.nn.utils.clip_grad_norm_(params, self.clip_grad)
        self.optimizer.step()
        return True, grad_norm, 0

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict()}
