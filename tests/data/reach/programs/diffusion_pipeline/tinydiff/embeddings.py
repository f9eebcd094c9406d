import math

import torch
from torch import nn


class TimestepEmbedding(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
        # a scalar timestep is broadcast over the batch; under torch.compile the .item() is a graph break that
        # runs eagerly between two cudagraphed parts (H200: correct), not a capture hazard
        step = t.item() if t.ndim == 0 else t  # ok: capture-item-sync
        args = torch.as_tensor(step, device=freqs.device).float()[..., None] * freqs
        return self.mlp(torch.cat([args.sin(), args.cos()], dim=-1))
