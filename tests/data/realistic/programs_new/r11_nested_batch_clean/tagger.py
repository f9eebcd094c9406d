"""Sequence tagger that reads a padding mask and per-token segment ids."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SegmentTagger(nn.Module):
    def __init__(self, vocab=2048, dim=128, segments=4, tags=9, heads=4):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, dim)
        self.seg = nn.Embedding(segments, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ff = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.cls = nn.Linear(dim, tags)

    def forward(self, tokens, extras):
        b, t = tokens.shape
        h = self.tok(tokens) + self.seg(extras["segment_ids"])
        q, k, v = self.qkv(h).view(b, t, 3, self.heads, -1).unbind(2)
        bias = torch.zeros(b, 1, 1, t, device=h.device).masked_fill(~extras["attention_mask"][:, None, None, :],
                                                                    float("-inf"))
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=bias)
        h = h + self.proj(a.transpose(1, 2).reshape(b, t, -1))
        h = h + self.ff(h)
        return self.cls(h).log_softmax(-1)
