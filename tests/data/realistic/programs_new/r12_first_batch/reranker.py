"""Late-interaction reranker: max-sim between query and document token vectors."""
import torch.nn as nn
import torch.nn.functional as F


class MaxSimReranker(nn.Module):
    def __init__(self, dim=96, width=192):
        super().__init__()
        self.q_proj = nn.Sequential(nn.Linear(dim, width), nn.GELU(), nn.Linear(width, dim))
        self.d_proj = nn.Sequential(nn.Linear(dim, width), nn.GELU(), nn.Linear(width, dim))

    def forward(self, q, d):
        qv = F.normalize(self.q_proj(q), dim=-1)
        dv = F.normalize(self.d_proj(d), dim=-1)
        sim = qv @ dv.transpose(-1, -2)
        return sim.max(dim=-1).values.sum(dim=-1)
