"""Eager single-GPU layers with the runtime's names."""

from dataclasses import dataclass

import torch
from torch import nn


class QKVParallelLinear(nn.Linear):
    def __init__(
        self, hidden_size: int, head_size: int, num_heads: int, num_kv_heads: int, bias: bool = True
    ) -> None:
        super().__init__(hidden_size, (num_heads + 2 * num_kv_heads) * head_size, bias=bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return super().forward(x), None


class RowParallelLinear(nn.Linear):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return super().forward(x), None


class RMSNorm(nn.RMSNorm):
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__(hidden_size, eps=eps)


class VocabParallelEmbedding(nn.Embedding):
    pass


class ParallelLMHead(nn.Linear):
    def __init__(self, vocab_size: int, hidden_size: int) -> None:
        super().__init__(hidden_size, vocab_size, bias=False)


@dataclass
class LogitsProcessorOutput:
    next_token_logits: torch.Tensor


class LogitsProcessor(nn.Module):
    def __init__(self, config: object) -> None:
        super().__init__()
        self.config = config

    def forward(self, input_ids, hidden_states, lm_head, forward_batch) -> LogitsProcessorOutput:
        return LogitsProcessorOutput(lm_head(hidden_states))


class RadixAttention(nn.Module):
    def __init__(
        self, num_heads: int, head_dim: int, scaling: float, num_kv_heads: int, layer_id: int
    ) -> None:
        super().__init__()
        self.tp_q_head_num = num_heads
        self.tp_k_head_num = num_kv_heads
        self.qk_head_dim = head_dim
        self.scaling = scaling
        self.layer_id = layer_id

    def forward(self, q, k, v, forward_batch):
        return forward_batch.attn_backend.forward(q, k, v, self, forward_batch)


class _Rope(nn.Module):
    def forward(
        self, positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return q, k


def get_rope(head_dim: int, rotary_dim: int, max_position: int) -> nn.Module:
    return _Rope()


def default_weight_loader(param: torch.Tensor, loaded_weight: torch.Tensor) -> None:
    param.data.copy_(loaded_weight)
