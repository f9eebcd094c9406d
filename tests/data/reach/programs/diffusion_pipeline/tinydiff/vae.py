import numpy as np
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, ch: int = 64) -> None:
        super().__init__()
        self.conv_in = nn.Conv2d(4, ch, 3, padding=1)
        self.up = nn.Upsample(scale_factor=8)
        self.conv_out = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        z = self._clip_latents(z)
        return self.conv_out(self.up(self.conv_in(z)))

    def _clip_latents(self, z: torch.Tensor) -> torch.Tensor:
        return z.clamp_(-4.0, 4.0)  # ruleid: compile-skip-cudagraphs

    def to_images(self, x: torch.Tensor) -> np.ndarray:
        x = (x / 2 + 0.5).clamp(0, 1)
        return x.permute(0, 2, 3, 1).float().cpu().numpy()  # ok: capture-host-copy
