"""TinyLM for TensorRT-LLM's PyTorch backend."""

import logging

import torch
from tinyengine.attention import AttentionMetadata
from tinyengine.modeling import (
    DecoderModel,
    DecoderModelForCausalLM,
    register_auto_model,
)
from tinyengine.modules import Attention, DecoderLayer, Embedding, GatedMLP, ModelConfig, RMSNorm
from torch import nn
from transformers import PretrainedConfig

logger = logging.getLogger(__name__)


class TinyDecoderLayer(DecoderLayer):
    def __init__(self, model_config: ModelConfig[PretrainedConfig], layer_idx: int) -> None:
        super().__init__()
        config = model_config.pretrained_config
        self.layer_idx = layer_idx
        self.self_attn = Attention(
            hidden_size=config.hidden_size,
            num_attention_heads=config.num_attention_heads,
            num_key_value_heads=config.num_key_value_heads,
            max_position_embeddings=config.max_position_embeddings,
            bias=False,
            layer_idx=layer_idx,
            config=model_config,
        )
        self.mlp = GatedMLP(
            hidden_size=config.hidden_size,
            intermediate_size=config.intermediate_size,
            bias=False,
            config=model_config,
        )
        self.input_layernorm = RMSNorm(hidden_size=config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(
            hidden_size=config.hidden_size, eps=config.rms_norm_eps
        )
        # Running activation amax for FP8 calibration, kept on the host.
        self.act_amax = torch.zeros(1)

    def forward(
        self,
        position_ids: torch.Tensor,
        hidden_states: torch.Tensor,
        attn_metadata: AttentionMetadata,
        **kwargs,
    ) -> torch.Tensor:
        h = self.input_layernorm(hidden_states)
        hidden_states = hidden_states + self.self_attn(
            position_ids=position_ids, hidden_states=h, attn_metadata=attn_metadata
        )
        h = self.post_attention_layernorm(hidden_states)
        hidden_states = hidden_states + self.mlp(h)
        amax = hidden_states.abs().amax().float().cpu()  # ok: capture-host-copy
        self.act_amax.copy_(torch.maximum(self.act_amax, amax))
        return hidden_states


class TinyModel(DecoderModel):
    def __init__(self, model_config: ModelConfig[PretrainedConfig]) -> None:
        super().__init__(model_config)
        config = model_config.pretrained_config
        self.embed_tokens = Embedding(
            config.vocab_size, config.hidden_size, dtype=config.torch_dtype
        )
        self.layers = nn.ModuleList(
            [TinyDecoderLayer(model_config, i) for i in range(config.num_hidden_layers)]
        )
        self.norm = RMSNorm(hidden_size=config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self,
        attn_metadata: AttentionMetadata,
        input_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs,
    ) -> torch.Tensor:
        hidden_states = self.embed_tokens(input_ids)
        for layer in self.layers:
            hidden_states = layer(position_ids, hidden_states, attn_metadata)
        torch.cuda.synchronize()  # ok: capture-explicit-sync
        return self.norm(hidden_states)


@register_auto_model("TinyLMForCausalLM")
class TinyLMForCausalLM(DecoderModelForCausalLM[TinyModel, PretrainedConfig]):
    def __init__(self, model_config: ModelConfig[PretrainedConfig]) -> None:
        super().__init__(
            TinyModel(model_config),
            config=model_config,
            hidden_size=model_config.pretrained_config.hidden_size,
            vocab_size=model_config.pretrained_config.vocab_size,
        )
        self.soft_cap = float(model_config.pretrained_config.final_logit_softcapping)

    def forward(
        self,
        attn_metadata: AttentionMetadata,
        input_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        return_context_logits: bool = False,
        **kwargs,
    ) -> torch.Tensor:
        logits = super().forward(
            attn_metadata,
            input_ids=input_ids,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            return_context_logits=return_context_logits,
            **kwargs,
        )
        peak = logits.abs().amax().item()  # ok: capture-item-sync
        return torch.tanh(logits / max(peak, self.soft_cap)) * self.soft_cap

    def load_weights(self, weights: dict[str, torch.Tensor], weight_mapper=None) -> None:
        super().load_weights(weights, weight_mapper)
        head_norm = self.lm_head.weight.float().norm().item()  # ok: capture-item-sync
        embed_rows = self.model.embed_tokens.weight[:4].cpu()  # ok: capture-host-copy
        torch.cuda.synchronize()  # ok: capture-explicit-sync
        logger.info("lm_head norm %.3f, first embedding rows %s", head_norm, embed_rows)
