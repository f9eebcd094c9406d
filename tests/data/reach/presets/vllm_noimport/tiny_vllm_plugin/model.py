"""TinyMix: a small decoder-only model written against vLLM's model interface."""

import logging
from collections.abc import Iterable

import torch
from tinyfw.compile import support_torch_compile
from tinyfw.config import VllmConfig
from tinyfw.interfaces import IntermediateTensors, SupportsPP
from tinyfw.layers import (
    Attention,
    LogitsProcessor,
    MergedColumnParallelLinear,
    ParallelLMHead,
    QKVParallelLinear,
    RMSNorm,
    RowParallelLinear,
    VocabParallelEmbedding,
    get_rope,
)
from tinyfw.loading import default_weight_loader
from torch import nn

from .ops import TinyGeluAndMul

logger = logging.getLogger(__name__)


class TinyMixMLP(nn.Module):
    def __init__(
        self, hidden_size: int, intermediate_size: int, clip_ratio: float, prefix: str = ""
    ) -> None:
        super().__init__()
        self.gate_up_proj = MergedColumnParallelLinear(
            hidden_size, [intermediate_size] * 2, bias=False, prefix=f"{prefix}.gate_up_proj"
        )
        self.down_proj = RowParallelLinear(
            intermediate_size, hidden_size, bias=False, prefix=f"{prefix}.down_proj"
        )
        self.act_fn = TinyGeluAndMul()
        self.clip_ratio = clip_ratio

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate_up, _ = self.gate_up_proj(x)
        limit = self.clip_ratio * gate_up.abs().mean().item()  # ok: capture-item-sync
        gate_up = gate_up.clamp(-limit, limit)
        x = self.act_fn(gate_up)
        x, _ = self.down_proj(x)
        return x


class TinyMixAttention(nn.Module):
    def __init__(self, config, cache_config, quant_config, prefix: str = "") -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.hidden_size // self.num_heads
        self.q_size = self.num_heads * self.head_dim
        self.kv_size = self.num_kv_heads * self.head_dim
        self.qkv_proj = QKVParallelLinear(
            config.hidden_size,
            self.head_dim,
            self.num_heads,
            self.num_kv_heads,
            bias=False,
            prefix=f"{prefix}.qkv_proj",
        )
        self.o_proj = RowParallelLinear(
            self.q_size, config.hidden_size, bias=False, prefix=f"{prefix}.o_proj"
        )
        self.rotary_emb = get_rope(
            self.head_dim, rotary_dim=self.head_dim, max_position=config.max_position_embeddings
        )
        self.attn = Attention(
            self.num_heads,
            self.head_dim,
            self.head_dim**-0.5,
            num_kv_heads=self.num_kv_heads,
            cache_config=cache_config,
            quant_config=quant_config,
            prefix=f"{prefix}.attn",
        )

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        qkv, _ = self.qkv_proj(hidden_states)
        q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q, k = self.rotary_emb(positions, q, k)
        attn_output = self.attn(q, k, v)
        output, _ = self.o_proj(attn_output)
        return output


class TinyMixDecoderLayer(nn.Module):
    def __init__(self, config, cache_config, quant_config, prefix: str = "") -> None:
        super().__init__()
        self.self_attn = TinyMixAttention(
            config, cache_config, quant_config, prefix=f"{prefix}.self_attn"
        )
        self.mlp = TinyMixMLP(
            config.hidden_size, config.intermediate_size, config.clip_ratio, prefix=f"{prefix}.mlp"
        )
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        h = self.input_layernorm(hidden_states)
        hidden_states = hidden_states + self.self_attn(positions, h)
        h = self.post_attention_layernorm(hidden_states)
        return hidden_states + self.mlp(h)


class WeightNormProbe(nn.Module):
    """Reports the norm of a loaded weight; only used while loading, never in the forward."""

    def forward(self, weight: torch.Tensor) -> float:
        return weight.float().norm().item()  # ok: capture-item-sync


@support_torch_compile
class TinyMixModel(nn.Module):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [
                TinyMixDecoderLayer(
                    config,
                    vllm_config.cache_config,
                    vllm_config.quant_config,
                    prefix=f"{prefix}.layers.{i}",
                )
                for i in range(config.num_hidden_layers)
            ]
        )
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.embed_scale = torch.tensor(config.hidden_size**0.5)
        self.embed_scale_value = self.embed_scale.item()  # ok: capture-item-sync

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        intermediate_tensors: IntermediateTensors | None = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        hidden_states = self.embed_tokens(input_ids) * self.embed_scale_value
        for layer in self.layers:
            hidden_states = layer(positions, hidden_states)
        hidden_states = self.norm(hidden_states)
        rms = hidden_states.pow(2).mean().sqrt().item()  # ok: capture-item-sync
        return hidden_states / max(rms, 1.0)


class TinyMixForCausalLM(nn.Module, SupportsPP):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        self.config = config
        self.model = TinyMixModel(vllm_config=vllm_config, prefix=f"{prefix}.model")
        self.lm_head = ParallelLMHead(config.vocab_size, config.hidden_size)
        self.logits_processor = LogitsProcessor(config.vocab_size)

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        intermediate_tensors: IntermediateTensors | None = None,
        inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor:
        hidden_states = self.model(input_ids, positions, intermediate_tensors, inputs_embeds)
        torch.cuda.synchronize()  # ok: capture-explicit-sync
        return hidden_states

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        # Called by the runner after the graph replay, eagerly.
        logits = self.logits_processor(self.lm_head, hidden_states)
        self.last_max_logit = logits.max().item()  # ok: capture-item-sync
        return logits

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        params = dict(self.named_parameters())
        loaded: set[str] = set()
        for name, tensor in weights:
            param = params[name]
            weight_loader = getattr(param, "weight_loader", default_weight_loader)
            weight_loader(param, tensor)
            loaded.add(name)
        norm = WeightNormProbe()(params["model.norm.weight"])
        torch.cuda.synchronize()  # ok: capture-explicit-sync
        host_copy = params["lm_head.weight"][:8].cpu()  # ok: capture-host-copy
        logger.info(
            "loaded %d tensors, final norm %.3f, lm_head head %s", len(loaded), norm, host_copy
        )
        return loaded
