"""Plain single-GPU versions of the layers the model uses."""

import torch
from torch import nn


class MergedColumnParallelLinear(nn.Linear):
    def __init__(
        self, input_size: int, output_sizes: list[int], bias: bool = True, prefix: str = ""
    ) -> None:
        super().__init__(input_size, sum(output_sizes), bias=bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return super().forward(x), None


class QKVParallelLinear(nn.Linear):
    def __init__(
        self,
        hidden_size: int,
        head_size: int,
        num_heads: int,
        num_kv_heads: int,
        bias: bool = True,
        prefix: str = "",
    ) -> None:
        super().__init__(hidden_size, (num_heads + 2 * num_kv_heads) * head_size, bias=bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return super().forward(x), None


class RowParallelLinear(nn.Linear):
    def __init__(
        self, input_size: int, output_size: int, bias: bool = True, prefix: str = ""
    ) -> None:
        super().__init__(input_size, output_size, bias=bias)

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


class LogitsProcessor(nn.Module):
    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, lm_head: nn.Linear, hidden_states: torch.Tensor) -> torch.Tensor:
        return lm_head(hidden_states)


class _Rope(nn.Module):
    def __init__(self, head_dim: int, max_position: int) -> None:
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_position).float(), inv)
        self.register_buffer("cos", freqs.cos(), persistent=False)
        self.register_buffer("sin", freqs.sin(), persistent=False)

    def forward(
        self, positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return q, k


def get_rope(head_dim: int, rotary_dim: int, max_position: int) -> nn.Module:
    return _Rope(rotary_dim, max_position)


class Attention(nn.Module):
    def __init__(
        self, num_heads: int, head_dim: int, scale: float, num_kv_heads: int, **kwargs: object
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        shape = (q.shape[0], -1, self.head_dim)
        out = nn.functional.scaled_dot_product_attention(
            q.view(shape).transpose(0, 1),
            k.view(shape).transpose(0, 1),
            v.view(shape).transpose(0, 1),
        )
        return out.transpose(0, 1).reshape(q.shape)
