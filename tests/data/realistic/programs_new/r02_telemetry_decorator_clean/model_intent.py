"""Intent classifier over hashed n-gram features."""
import torch.nn as nn
import torch.nn.functional as F

from telemetry import instrumented


class ResidualBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.fc2(F.silu(self.fc1(self.norm(x))))


class IntentClassifier(nn.Module):
    def __init__(self, in_dim=512, dim=256, hidden=512, depth=3, num_intents=40):
        super().__init__()
        self.proj = nn.Linear(in_dim, dim)
        self.blocks = nn.Sequential(*[ResidualBlock(dim, hidden) for _ in range(depth)])
        self.head = nn.Linear(dim, num_intents)

    @instrumented("intent_classifier")
    def forward(self, feats):
        h = self.blocks(self.proj(feats))
        return self.head(h).softmax(dim=-1)
