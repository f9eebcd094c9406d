"""The model builds its encoder in __init__ and its decoder in a helper called from __init__."""

import torch
from encoders import Decoder, Encoder
from torch import nn


class AutoEncoder(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.enc = Encoder(dim)
        self._build_decoder(dim)

    def _build_decoder(self, dim: int) -> None:
        self.dec = Decoder(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dec(self.enc(x))
