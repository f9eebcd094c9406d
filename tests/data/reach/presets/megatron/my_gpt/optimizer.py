"""DistributedOptimizer that also reports how far the weights moved in the step."""

import torch
from megatron.core.optimizer import DistributedOptimizer


class DriftLoggingOptimizer(DistributedOptimizer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.last_drift = torch.zeros(1)
        self.drift_on_host = self.last_drift.item()  # ok: capture-item-sync

    def step(self):
        before = [p.detach().clone() for p in self._model_params()]
        success, grad_norm, num_zeros_in_grad = super().step()
        self._record_drift(before)
        return success, grad_norm, num_zeros_in_grad

    def _model_params(self) -> list[torch.Tensor]:
        return [p for group in self.optimizer.param_groups for p in group["params"]]

    def _record_drift(self, before: list[torch.Tensor]) -> None:
        moved = [
            (p.detach() - b).float().norm()
            for p, b in zip(self._model_params(), before, strict=True)
        ]
        self.last_drift = torch.stack(moved).max().cpu()  # ruleid: capture-host-copy

    def state_dict(self):
        state = super().state_dict()
        state["last_drift"] = self.last_drift.cpu()  # ok: capture-host-copy
        return state
