"""Feature denoiser over a dict of named feature tensors (TensorDict-style modules)."""
import torch
import torch.nn as nn


class ResidualMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


class FeatureDenoiser(nn.Module):
    def __init__(self, dim=96, hidden=256):
        super().__init__()
        self.block1 = ResidualMLP(dim, hidden)
        self.block2 = ResidualMLP(dim, hidden)
        self.head = nn.Linear(dim, 1)

    def forward(self, feats):
        raw = feats["h"]
        feats["raw"] = raw
        feats["h"] = self.block2(self.block1(raw))
        feats["score"] = self.head(feats["h"] - feats["raw"]).squeeze(-1)
        return feats
