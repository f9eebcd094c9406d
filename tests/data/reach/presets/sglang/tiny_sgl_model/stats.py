"""Host-side router statistics, read by the metrics endpoint."""

import torch


class RouterStats:
    def __init__(self, num_layers: int, num_experts: int) -> None:
        self.hist = torch.zeros(num_layers, num_experts, dtype=torch.int64)

    def observe(self, layer_id: int, expert_ids: torch.Tensor) -> None:
        flat = expert_ids.flatten()
        self.hist[layer_id].index_add_(0, flat, torch.ones_like(flat))

    def snapshot(self) -> list[list[int]]:
        return self.hist.tolist()
