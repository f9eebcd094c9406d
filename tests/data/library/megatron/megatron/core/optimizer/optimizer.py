"""Megatron-style optimizers: OptimizerCudaGraphWrapper captures `optimizer.step` (training.py)."""

import torch

from megatron.core import parallel_state


class MegatronOptimizer:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def step(self):
        raise NotImplementedError

    def world(self):
        return parallel_state.get_data_parallel_world_size()

    def get_loss_scale(self):
        return torch.tensor([1.0], device="cuda")


class MixedPrecisionOptimizer(MegatronOptimizer):
    def _unscale_main_grads_and_check_for_nan(self):
        found_inf = torch.zeros(1, device="cuda")
        return found_inf.item() > 0  # ruleid: capture-item-sync

    def step(self):
        found_inf = self._unscale_main_grads_and_check_for_nan()
        if found_inf:
            return False, None, None
        self.optimizer.step()
        return True, None, None

    def state_dict(self):
        return {"loss_scale": self.get_loss_scale().item()}  # ok: capture-item-sync


class ChainedOptimizer(MegatronOptimizer):
    def __init__(self, chained):
        self.chained_optimizers = chained

    def step(self):
        grad_norm = torch.zeros(1, device="cuda")
        print(f"grad norm {grad_norm}")  # ruleid: capture-item-sync
        return True, grad_norm, None
