"""Eager layers with the engine's names."""

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch
from torch import nn

C = TypeVar("C")


@dataclass
class ModelConfig(Generic[C]):
    pretrained_config: Any


class DecoderLayer(nn.Module):
    pass


class Embedding(nn.Embedding):
    def __init__(self, num_embeddings: int, embedding_dim: int, dtype: Any = None) -> None:
        super().__init__(num_embeddings, embedding_dim, dtype=dtype)


class RMSNorm(nn.RMSNorm):
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__(hidden_size, eps=eps)


class GatedMLP(nn.Module):
    def __init__(
        self, hidden_size: int, intermediate_size: int, bias: bool = False, config: Any = None
    ) -> None:
        super().__init__()
        self.gate_up = nn.Linear(hidden_size, 2 * intermediate_size, bias=bias)
        self.down = nn.Linear(intermediate_size, hidden_size, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(nn.functional.silu(gate) * up)


class Attention(nn.Module):
    def __init__(
        self,
        hidden_size: int,
        num_attention_heads: int,
        num_key_value_heads: int,
        max_position_embeddings: int,
        bias: bool,
        layer_idx: int,
        config: Any,
    ) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden_size, num_attention_heads, bias=bias)

    def forward(
        self, position_ids: torch.Tensor, hidden_states: torch.Tensor, attn_metadata: Any
    ) -> torch.Tensor:
        out, _ = self.attn(hidden_states, hidden_states, hidden_states, need_weights=False)
        return out
