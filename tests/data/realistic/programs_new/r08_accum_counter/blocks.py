"""Encoder trunk that keeps track of how many micro-batches it has processed."""
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
        self.micro_step = 0

    def forward(self, x):
        self.micro_step += 1
        return self.blocks(self.inp(x))
