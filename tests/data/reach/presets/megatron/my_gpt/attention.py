"""Self-attention that closes a profiler range on the GPU work of the layer."""

import torch
from megatron.core.transformer.attention import SelfAttention


class ProfiledSelfAttention(SelfAttention):
    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor, **kwargs):
        torch.cuda.nvtx.range_push(f"attn-{self.layer_number}")
        output, bias = super().forward(hidden_states, attention_mask, **kwargs)
        torch.cuda.synchronize()  # ruleid: capture-explicit-sync
        torch.cuda.nvtx.range_pop()
        return output, bias
