"""Eager fallbacks with TransformerEngine's names, for machines without TE (no graphs, no FP8)."""

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch
from torch import nn


class Format(Enum):
    E4M3 = 1
    HYBRID = 2


@dataclass
class DelayedScaling:
    fp8_format: Format = Format.HYBRID
    amax_history_len: int = 1


class LayerNorm(nn.LayerNorm):
    pass


class LayerNormMLP(nn.Module):
    def __init__(self, hidden: int, ffn: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


class MultiheadAttention(nn.Module):
    def __init__(
        self, hidden: int, heads: int, attn_mask_type: str = "causal", fuse_qkv_params: bool = True
    ) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.attn(x, x, x, need_weights=False, is_causal=False)
        return out


def make_graphed_callables(modules: Any, sample_args: Any, **kwargs: Any) -> Any:
    """Same call shape as the graphing API; returns the callables unchanged (eager)."""
    hook: Callable[[], None] | None = kwargs.get("pre_warmup_hook")
    if hook is not None:
        hook()
    return modules


def autocast(
    enabled: bool = False, recipe: DelayedScaling | None = None
) -> AbstractContextManager[None]:
    return nullcontext()
