"""Reconstruction-error scoring for sensor windows."""
import torch
import torch.nn as nn


class WindowAutoencoder(nn.Module):
    def __init__(self, channels=8, window=64, latent=32):
        super().__init__()
        d = channels * window
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(d, 256), nn.GELU(), nn.Linear(256, latent))
        self.dec = nn.Sequential(nn.Linear(latent, 256), nn.GELU(), nn.Linear(256, d))
        self.channels, self.window = channels, window

    def forward(self, x):
        z = self.enc(x)
        return self.dec(z).view(-1, self.channels, self.window)


def standardize(err, mean, std):
    return (err - mean) / std


def window_scores(model, x, mean, std, z_thresh):
    recon = model(x)
    err = (recon - x).pow(2).mean(dim=(1, 2))
    z = standardize(err, mean, std)
    alarm = z > z_thresh
    peak = ((z - z_thresh) * alarm).sum()
    return z, alarm, peak
