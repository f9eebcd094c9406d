"""Small Transformer encoder with a span-extraction head (SQuAD 2.0 style, with a null answer)."""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from heads import build_head

PAD_ID, CLS_ID, SEP_ID = 0, 1, 2


@dataclass
class ModelConfig:
    vocab: int = 4096
    hidden: int = 192
    heads: int = 6
    depth: int = 3
    max_len: int = 128
    max_answer_len: int = 24
    head: str = "pruned"
    head_inner: int = 256
    start_threshold: float = 0.25
    min_candidates: int = 256


class EncoderBlock(nn.Module):
    def __init__(self, dim, heads, ff_mult=4):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff_mult * dim), nn.GELU(), nn.Linear(ff_mult * dim, dim))

    def forward(self, x, attn_bias):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.ff(self.norm2(x))


def span_band(max_len, max_answer_len):
    ones = torch.ones(max_len, max_len, dtype=torch.bool)
    band = torch.triu(ones) & ~torch.triu(ones, diagonal=max_answer_len)
    band[0, :] = False
    band[:, 0] = False
    return band


def decode_best_span(start_logits, end_logits, band):
    t = start_logits.shape[1]
    pair = start_logits[:, :, None] + end_logits[:, None, :]
    pair = pair.masked_fill(~band[:t, :t], float("-inf"))
    best, flat = pair.flatten(1).max(dim=1)
    start = torch.div(flat, t, rounding_mode="floor")
    end = flat % t
    null = start_logits[:, 0] + end_logits[:, 0]
    return start, end, best - null


class SpanExtractor(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden, padding_idx=PAD_ID)
        self.segment = nn.Embedding(2, cfg.hidden)
        self.pos = nn.Parameter(torch.randn(cfg.max_len, cfg.hidden) * 0.02)
        self.blocks = nn.ModuleList(EncoderBlock(cfg.hidden, cfg.heads) for _ in range(cfg.depth))
        self.norm = nn.LayerNorm(cfg.hidden)
        self.head = build_head(cfg)
        self.register_buffer("band", span_band(cfg.max_len, cfg.max_answer_len), persistent=False)
        self.register_buffer("positions", torch.arange(cfg.max_len), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        pad = ids.eq(PAD_ID)
        in_context = ids.eq(SEP_ID).cumsum(dim=1) > 0
        candidates = in_context & ~pad & ~ids.eq(SEP_ID)
        allowed = candidates | self.positions[:t].eq(0)[None, :]
        h = self.embed(ids) + self.segment(in_context.long()) + self.pos[:t]
        attn_bias = pad.to(h.dtype).mul(-1e4)[:, None, None, :]
        for blk in self.blocks:
            h = blk(h, attn_bias)
        h = self.norm(h)
        start_logits, end_logits = self.head(h, allowed, candidates)
        start, end, margin = decode_best_span(start_logits, end_logits, self.band)
        return start_logits, end_logits, start, end, margin
