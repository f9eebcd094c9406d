"""Layers for the noise-regularised residual classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GaussianNoise(nn.Module):
    """Additive Gaussian noise while training; identity in eval mode."""

    def __init__(self, std, generator=None):
        super().__init__()
        self.std = std
        self.gen = generator

    def forward(self, x):
        if not self.training or self.std == 0:
            return x
        eps = torch.randn(x.shape, device=x.device, dtype=x.dtype, generator=self.gen)
        return x + self.std * eps

    def extra_repr(self):
        return f"std={self.std}"


class ResidualBlock(nn.Module):
    def __init__(self, width, noise):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)
        self.noise = noise

    def forward(self, h):
        z = self.fc2(F.gelu(self.fc1(self.norm(h))))
        return h + self.noise(z)


class NoisyClassifier(nn.Module):
    def __init__(self, d_in, n_classes, width=256, depth=3, input_noise=0.1, hidden_noise=0.05, generator=None):
        super().__init__()
        self.input_noise = GaussianNoise(input_noise, generator)
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList(ResidualBlock(width, GaussianNoise(hidden_noise, generator))
                                    for _ in range(depth))
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, n_classes))

    def forward(self, x):
        h = self.inp(self.input_noise(x))
        for blk in self.blocks:
            h = blk(h)
        return self.head(h)
