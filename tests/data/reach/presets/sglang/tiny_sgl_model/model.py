"""TinyRoute model for SGLang: dense attention + top-k routed MLP experts."""

import logging
from collections.abc import Iterable

import torch
from sglang.srt.layers.layernorm import RMSNorm
from sglang.srt.layers.linear import QKVParallelLinear, RowParallelLinear
from sglang.srt.layers.logits_processor import LogitsProcessor, LogitsProcessorOutput
from sglang.srt.layers.radix_attention import RadixAttention
from sglang.srt.layers.rotary_embedding import get_rope
from sglang.srt.layers.vocab_parallel_embedding import ParallelLMHead, VocabParallelEmbedding
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from sglang.srt.model_loader.weight_utils import default_weight_loader
from torch import nn

from .stats import RouterStats

logger = logging.getLogger(__name__)


class TinyRouteMoE(nn.Module):
    def __init__(self, config, layer_id: int, stats: RouterStats) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.top_k = config.num_experts_per_tok
        self.gate = nn.Linear(config.hidden_size, config.num_experts, bias=False)
        self.w_in = nn.Parameter(
            torch.empty(config.num_experts, config.hidden_size, config.moe_intermediate_size)
        )
        self.w_out = nn.Parameter(
            torch.empty(config.num_experts, config.moe_intermediate_size, config.hidden_size)
        )
        self.stats = stats

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        probs = self.gate(hidden_states).softmax(dim=-1)
        topk_weights, topk_ids = torch.topk(probs, self.top_k, dim=-1)
        self.stats.observe(self.layer_id, topk_ids.cpu())  # ruleid: capture-host-copy
        dense = torch.zeros_like(probs).scatter(-1, topk_ids, topk_weights)
        h = torch.einsum("td,edf->tef", hidden_states, self.w_in)
        h = torch.nn.functional.silu(h)
        out = torch.einsum("tef,efd->ted", h, self.w_out)
        return (out * dense.unsqueeze(-1)).sum(dim=1)


class TinyRouteAttention(nn.Module):
    def __init__(self, config, layer_id: int) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.hidden_size // self.num_heads
        self.q_size = self.num_heads * self.head_dim
        self.kv_size = self.num_kv_heads * self.head_dim
        self.qkv_proj = QKVParallelLinear(
            config.hidden_size, self.head_dim, self.num_heads, self.num_kv_heads, bias=False
        )
        self.o_proj = RowParallelLinear(self.q_size, config.hidden_size, bias=False)
        self.rotary_emb = get_rope(
            self.head_dim, rotary_dim=self.head_dim, max_position=config.max_position_embeddings
        )
        self.attn = RadixAttention(
            self.num_heads,
            self.head_dim,
            self.head_dim**-0.5,
            num_kv_heads=self.num_kv_heads,
            layer_id=layer_id,
        )

    def forward(
        self, positions: torch.Tensor, hidden_states: torch.Tensor, forward_batch: ForwardBatch
    ) -> torch.Tensor:
        qkv, _ = self.qkv_proj(hidden_states)
        q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q, k = self.rotary_emb(positions, q, k)
        attn_output = self.attn(q, k, v, forward_batch)
        output, _ = self.o_proj(attn_output)
        return output


class TinyRouteDecoderLayer(nn.Module):
    def __init__(self, config, layer_id: int, stats: RouterStats) -> None:
        super().__init__()
        self.self_attn = TinyRouteAttention(config, layer_id)
        self.mlp = TinyRouteMoE(config, layer_id, stats)
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self, positions: torch.Tensor, hidden_states: torch.Tensor, forward_batch: ForwardBatch
    ) -> torch.Tensor:
        h = self.input_layernorm(hidden_states)
        hidden_states = hidden_states + self.self_attn(positions, h, forward_batch)
        h = self.post_attention_layernorm(hidden_states)
        return hidden_states + self.mlp(h)


class TinyRouteModel(nn.Module):
    def __init__(self, config, stats: RouterStats) -> None:
        super().__init__()
        self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [TinyRouteDecoderLayer(config, i, stats) for i in range(config.num_hidden_layers)]
        )
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self, input_ids: torch.Tensor, positions: torch.Tensor, forward_batch: ForwardBatch
    ) -> torch.Tensor:
        hidden_states = self.embed_tokens(input_ids)
        for layer in self.layers:
            hidden_states = layer(positions, hidden_states, forward_batch)
        return self.norm(hidden_states)


class WeightNormProbe(nn.Module):
    """Reports the norm of a loaded weight; only used while loading, never in the forward."""

    def forward(self, weight: torch.Tensor) -> float:
        return weight.float().norm().item()  # ok: capture-item-sync


class TinyRouteForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.router_stats = RouterStats(config.num_hidden_layers, config.num_experts)
        self.model = TinyRouteModel(config, self.router_stats)
        self.lm_head = ParallelLMHead(config.vocab_size, config.hidden_size)
        self.logits_processor = LogitsProcessor(config)
        self.logit_scale = torch.tensor(getattr(config, "logit_scale", 1.0))
        logger.info("logit scale %.3f", self.logit_scale.item())  # ok: capture-item-sync

    @torch.no_grad()
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: torch.Tensor | None = None,
    ) -> LogitsProcessorOutput:
        hidden_states = self.model(input_ids, positions, forward_batch)
        scale = self.logit_scale.item()  # ruleid: capture-item-sync
        return self.logits_processor(input_ids, hidden_states * scale, self.lm_head, forward_batch)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        params = dict(self.named_parameters())
        for name, loaded_weight in weights:
            param = params[name]
            weight_loader = getattr(param, "weight_loader", default_weight_loader)
            weight_loader(param, loaded_weight)
        gate_norm = WeightNormProbe()(params["model.layers.0.mlp.gate.weight"])
        first_rows = params["lm_head.weight"][:4].cpu()  # ok: capture-host-copy
        logger.info("router gate norm %.4f, lm_head rows %s", gate_norm, first_rows)


EntryClass = TinyRouteForCausalLM
