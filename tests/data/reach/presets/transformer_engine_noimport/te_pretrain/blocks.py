"""Transformer blocks built from TransformerEngine modules."""

import torch
from torch import nn

import te_pretrain.eager as te


class AttentionBlock(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.norm = te.LayerNorm(hidden)
        self.attn = te.MultiheadAttention(
            hidden, heads, attn_mask_type="causal", fuse_qkv_params=True
        )
        self.head_dim = torch.tensor(hidden // heads)
        self.scale = self.head_dim.float().rsqrt().item()  # ok: capture-item-sync

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.attn(self.norm(x))
        self.out_norm_host = out.detach().float().norm().cpu()  # ok: capture-host-copy
        return x + out * self.scale


class MLPBlock(nn.Module):
    def __init__(self, hidden: int, ffn: int) -> None:
        super().__init__()
        self.mlp = te.LayerNormMLP(hidden, ffn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.mlp(x)
        peak = out.abs().max().item()  # ok: capture-item-sync
        return x + out.clamp(-peak, peak)
