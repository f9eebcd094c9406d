"""Masked token-level negative log-likelihood for the causal scorer."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphing import cuda_graphed


class CausalBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class CausalScorer(nn.Module):
    def __init__(self, vocab=1024, dim=128, layers=2, heads=4, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(CausalBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens):
        t = tokens.shape[1]
        h = self.tok(tokens) + self.pos.weight[:t]
        for blk in self.blocks:
            h = blk(h)
        return self.out(self.norm(h))


def token_mask(lengths, t):
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def nll_terms(model, tokens, lengths):
    logits = model(tokens[:, :-1])
    nll = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")
    mask = token_mask(lengths - 1, tokens.shape[1] - 1)
    return (nll * mask).sum(), mask.sum()


@cuda_graphed()
def graphed_nll_terms(model, tokens, lengths):
    return nll_terms(model, tokens, lengths)
