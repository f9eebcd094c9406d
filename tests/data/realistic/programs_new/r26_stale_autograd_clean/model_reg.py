"""Gated residual MLP for tabular regression, and the synthetic housing-style data it is trained on."""
import torch
import torch.nn as nn


class GatedBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.value = nn.Linear(width, width)
        self.gate = nn.Linear(width, width)

    def forward(self, h):
        z = self.norm(h)
        return h + self.value(z) * torch.sigmoid(self.gate(z))


class TabularRegressor(nn.Module):
    def __init__(self, d_in, width=256, depth=3, targets=2):
        super().__init__()
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.Sequential(*(GatedBlock(width) for _ in range(depth)))
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, targets))

    def forward(self, x):
        return self.head(self.blocks(self.inp(x)))


def make_batches(n, batch, d_in, targets, seed, device):
    """Fixed list of (x, y) batches: y is a smooth nonlinear function of x plus heteroscedastic noise."""
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(d_in, 64, generator=g) / d_in ** 0.5
    w2 = torch.randn(64, targets, generator=g) / 8.0
    out = []
    for _ in range(n):
        x = torch.randn(batch, d_in, generator=g)
        clean = torch.tanh(x @ w1) @ w2 + 0.1 * x[:, :targets]
        noise = 0.05 * (1 + x[:, :1].abs()) * torch.randn(batch, targets, generator=g)
        out.append((x.to(device), (clean + noise).to(device)))
    return out
