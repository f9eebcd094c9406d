"""Encoder trunk of the tagger."""
import torch.nn as nn
import torch.nn.functional as F


class MLPBlock(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Trunk(nn.Module):
    def __init__(self, d_in, width=256, hidden=512, depth=3):
        super().__init__()
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.Sequential(*[MLPBlock(width, hidden) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(self.inp(x))
