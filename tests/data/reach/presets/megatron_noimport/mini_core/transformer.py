from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


@dataclass
class TransformerConfig:
    hidden_size: int = 256
    num_attention_heads: int = 4
    ffn_hidden_size: int = 1024


@dataclass
class TransformerLayerSubmodules:
    self_attention: Any = None
    mlp: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


class SelfAttention(nn.Module):
    def __init__(self, config: TransformerConfig, layer_number: int = 1) -> None:
        super().__init__()
        self.layer_number = layer_number
        self.attn = nn.MultiheadAttention(config.hidden_size, config.num_attention_heads)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor, **kwargs: Any):
        out, _ = self.attn(hidden_states, hidden_states, hidden_states, attn_mask=attention_mask)
        return out, None


class _MLP(nn.Module):
    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, config.ffn_hidden_size)
        self.fc2 = nn.Linear(config.ffn_hidden_size, config.hidden_size)

    def forward(self, x: torch.Tensor):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x))), None


class TransformerLayer(nn.Module):
    def __init__(
        self,
        config: TransformerConfig,
        submodules: TransformerLayerSubmodules,
        layer_number: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.input_layernorm = nn.LayerNorm(config.hidden_size)
        self.self_attention = SelfAttention(config, layer_number)
        self.pre_mlp_layernorm = nn.LayerNorm(config.hidden_size)
        self.mlp = _MLP(config)

    def _forward_attention(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor, **kwargs: Any
    ):
        out, _ = self.self_attention(self.input_layernorm(hidden_states), attention_mask)
        return hidden_states + out, None

    def _forward_mlp(
        self, hidden_states: torch.Tensor, inference_context: Any = None, **kwargs: Any
    ) -> torch.Tensor:
        out, _ = self.mlp(self.pre_mlp_layernorm(hidden_states))
        return hidden_states + out

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor, **kwargs: Any):
        hidden_states, context = self._forward_attention(hidden_states, attention_mask)
        return self._forward_mlp(hidden_states), context
