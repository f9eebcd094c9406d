"""Small pre-norm transformer encoder with a pooled classification head."""
from dataclasses import dataclass

import torch
import torch.nn as nn

from attention import Attention


@dataclass
class EncoderConfig:
    vocab: int = 4096
    max_len: int = 128
    dim: int = 256
    heads: int = 4
    layers: int = 4
    ffn: int = 1024
    window: int = 16
    impl: str = "local"
    num_classes: int = 12


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.dim)
        self.attn = Attention.create(cfg)
        self.norm2 = nn.LayerNorm(cfg.dim)
        self.ffn = nn.Sequential(nn.Linear(cfg.dim, cfg.ffn), nn.GELU(), nn.Linear(cfg.ffn, cfg.dim))

    def forward(self, x, pad):
        x = x + self.attn(self.norm1(x), pad)
        return x + self.ffn(self.norm2(x))


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.pos = nn.Parameter(0.02 * torch.randn(cfg.max_len, cfg.dim))
        self.layers = nn.ModuleList()
        for _ in range(cfg.layers):
            self.layers.append(EncoderLayer(cfg))
        self.norm = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)

    def forward(self, tokens, pad):
        h = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for layer in self.layers:
            h = layer(h, pad)
        h = self.norm(h)
        w = pad.unsqueeze(-1).to(h.dtype)
        pooled = (h * w).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)
        return self.head(pooled).log_softmax(dim=-1)
