"""Self-attention variants, selected by name from the encoder config."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    _registry = {}

    def __init__(self, cfg):
        super().__init__()
        if cfg.dim % cfg.heads:
            raise ValueError(f"dim {cfg.dim} is not divisible by {cfg.heads} heads")
        self.heads = cfg.heads
        self.head_dim = cfg.dim // cfg.heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)
        self.proj = nn.Linear(cfg.dim, cfg.dim)

    @classmethod
    def register(cls, name):
        def add(impl):
            cls._registry[name] = impl
            return impl
        return add

    @classmethod
    def available(cls):
        return sorted(cls._registry)

    @classmethod
    def create(cls, cfg):
        if cfg.impl not in cls._registry:
            raise ValueError(f"unknown attention {cfg.impl!r}, expected one of {cls.available()}")
        return cls._registry[cfg.impl](cfg)

    def split_heads(self, x):
        b, n, _ = x.shape
        qkv = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return qkv[0], qkv[1], qkv[2]

    def merge_heads(self, ctx):
        b, h, n, d = ctx.shape
        return self.proj(ctx.transpose(1, 2).reshape(b, n, h * d))


@Attention.register("dense")
class DenseAttention(Attention):
    def forward(self, x, pad):
        q, k, v = self.split_heads(x)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(~pad[:, None, None, :], float("-inf"))
        return self.merge_heads(scores.softmax(dim=-1) @ v)


@Attention.register("sdpa")
class FusedAttention(Attention):
    def forward(self, x, pad):
        q, k, v = self.split_heads(x)
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])
        return self.merge_heads(ctx)


@Attention.register("local")
class LocalAttention(Attention):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.window = cfg.window

    def forward(self, x, pad):
        q, k, v = self.split_heads(x)
        n = x.shape[1]
        scores = (q @ k.transpose(-2, -1)) * self.scale
        band = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(-self.window).tril(self.window)
        keep = (band & pad[:, None, None, :]).expand_as(scores)
        masked = scores.masked_fill(~keep, float("-inf"))
        return self.merge_heads(masked.softmax(dim=-1) @ v)
