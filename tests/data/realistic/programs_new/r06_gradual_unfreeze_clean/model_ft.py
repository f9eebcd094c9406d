"""Pretrained-encoder + task-head classifier used for fine-tuning."""
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, d_in, width, depth):
        super().__init__()
        layers = [nn.Linear(d_in, width), nn.GELU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.GELU()]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class FineTuneClassifier(nn.Module):
    def __init__(self, encoder, width, num_classes, freeze_encoder=True):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, num_classes))
        self.freeze_encoder = freeze_encoder

    def forward(self, x):
        h = self.encoder(x)
        if self.freeze_encoder:
            h = h.detach()
        return self.head(h)
