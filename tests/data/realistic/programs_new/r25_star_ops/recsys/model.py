"""DLRM-style click-through-rate model: dense MLP, pooled sparse fields, pairwise interactions."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import recsys


def mlp(sizes, last_act=True):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_act or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class SparseField(nn.Module):
    """One categorical field: a hashed embedding table pooled over a multi-hot bag."""

    def __init__(self, num_rows, dim):
        super().__init__()
        self.num_rows = num_rows
        self.weight = nn.Parameter(torch.randn(num_rows, dim) * dim ** -0.5)

    def forward(self, raw_ids, lengths, pos):
        ids = recsys.hash_ids(raw_ids, self.num_rows)
        rows, inverse = recsys.dedup_ids(ids)
        vecs = F.embedding(rows, self.weight)[inverse]
        return recsys.bag_mean(vecs, lengths, pos)


class DLRMLite(nn.Module):
    def __init__(self, dense_dim, table_rows, dim=32, bag=16, bottom=(128, 64), top=(256, 128)):
        super().__init__()
        self.bottom = mlp([dense_dim, *bottom, dim])
        self.fields = nn.ModuleList(SparseField(n, dim) for n in table_rows)
        n = len(table_rows) + 1
        iu = torch.triu_indices(n, n, offset=1)
        self.register_buffer("iu_rows", iu[0], persistent=False)
        self.register_buffer("iu_cols", iu[1], persistent=False)
        self.register_buffer("pos", torch.arange(bag), persistent=False)
        self.top = mlp([dim + iu.shape[1], *top, 1], last_act=False)

    def forward(self, dense, raw_ids, lengths):
        d = self.bottom(dense)
        pooled = [field(raw_ids[:, i], lengths[:, i], self.pos) for i, field in enumerate(self.fields)]
        feats = torch.stack([d, *pooled], dim=1)
        inter = recsys.pairwise_dots(feats, self.iu_rows, self.iu_cols)
        return self.top(torch.cat([d, inter], dim=1)).squeeze(1)
