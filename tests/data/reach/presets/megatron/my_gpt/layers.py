"""Transformer layer whose MLP branch is scaled by a learnable gain (ReZero-style)."""

import torch
from megatron.core.transformer.transformer_config import TransformerConfig
from megatron.core.transformer.transformer_layer import TransformerLayer, TransformerLayerSubmodules

from .monitor import GainMonitor


class GatedResidualLayer(TransformerLayer):
    def __init__(
        self,
        config: TransformerConfig,
        submodules: TransformerLayerSubmodules,
        layer_number: int = 1,
        **kwargs,
    ) -> None:
        super().__init__(config=config, submodules=submodules, layer_number=layer_number, **kwargs)
        self.mlp_gain = torch.nn.Parameter(torch.full((1,), 0.1))
        self.gain_monitor = GainMonitor(max_gain=4.0)
        self.gain_at_init = self.mlp_gain.detach().cpu()  # ok: capture-host-copy

    def _forward_mlp(
        self, hidden_states: torch.Tensor, inference_context=None, **kwargs
    ) -> torch.Tensor:
        residual = hidden_states
        pre_mlp = self.pre_mlp_layernorm(hidden_states)
        mlp_output, _ = self.mlp(pre_mlp)
        gain = self.gain_monitor.clamped(self.mlp_gain)
        return residual + gain * mlp_output
