"""Small noise-conditioned denoiser (EDM-style preconditioning) for 2-D point clouds."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SigmaEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("freqs", torch.exp(torch.linspace(0, math.log(1000.0), dim // 2)))

    def forward(self, log_sigma, n):
        ang = log_sigma * self.freqs
        emb = torch.cat([ang.sin(), ang.cos()])
        return emb.expand(n, -1)


class Denoiser(nn.Module):
    def __init__(self, dim=2, width=256, emb=64, sigma_data=0.5):
        super().__init__()
        self.sigma_data = sigma_data
        self.embed = SigmaEmbedding(emb)
        self.fc1 = nn.Linear(dim + emb, width)
        self.fc2 = nn.Linear(width, width)
        self.fc3 = nn.Linear(width, dim)

    def forward(self, x, sigma):
        sd = self.sigma_data
        c_in = torch.rsqrt(sigma ** 2 + sd ** 2)
        c_skip = sd ** 2 / (sigma ** 2 + sd ** 2)
        c_out = sigma * sd * torch.rsqrt(sigma ** 2 + sd ** 2)
        log_sigma = (sigma.log() / 4).reshape(1)
        h = torch.cat([x * c_in, self.embed(log_sigma, x.shape[0])], dim=-1)
        h = F.silu(self.fc1(h))
        h = F.silu(self.fc2(h))
        return c_skip * x + c_out * self.fc3(h)
