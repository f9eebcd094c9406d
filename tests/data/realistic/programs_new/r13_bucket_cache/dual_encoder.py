"""Dual encoder with an in-batch softmax over passages."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TowerEncoder(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.mix = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, tokens):
        mask = (tokens != 0).unsqueeze(-1).float()
        h = self.embed(tokens)
        h = h + self.mix(h)
        return F.normalize((h * mask).sum(1) / mask.sum(1).clamp(min=1.0), dim=-1)


class DualEncoder(nn.Module):
    def __init__(self, vocab=4096, dim=128, temperature=0.05):
        super().__init__()
        self.q_tower = TowerEncoder(vocab, dim)
        self.p_tower = TowerEncoder(vocab, dim)
        self.temperature = temperature

    def forward(self, queries, passages):
        q = self.q_tower(queries)
        p = self.p_tower(passages)
        logits = q @ p.T / self.temperature
        return torch.log_softmax(logits, dim=-1).diagonal()
