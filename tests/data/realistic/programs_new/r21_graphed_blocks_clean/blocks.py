"""Residual blocks of the patch classifiers and the factory that stacks them."""
import torch.nn as nn

from layers import FeedForward, NormalizedBlock


class MixerBlock(NormalizedBlock):
    def __init__(self, dim, depth, tokens, token_hidden, channel_hidden):
        super().__init__(dim, depth)
        self.token_mix = FeedForward(tokens, token_hidden)
        self.norm1 = nn.LayerNorm(dim)
        self.channel_mix = FeedForward(dim, channel_hidden)
        self.norm2 = nn.LayerNorm(dim)
        self.init_branch(self.token_mix, self.channel_mix)

    def forward(self, x):
        mixed = self.token_mix(x.transpose(1, 2)).transpose(1, 2)
        x = self.norm1(self.rescale(x, mixed))
        x = self.norm2(self.rescale(x, self.channel_mix(x)))
        return x


class ResMLPBlock(NormalizedBlock):
    def __init__(self, dim, depth, tokens, channel_hidden):
        super().__init__(dim, depth)
        self.token_mix = nn.Linear(tokens, tokens)
        self.norm1 = nn.LayerNorm(dim)
        self.channel_mix = FeedForward(dim, channel_hidden)
        self.norm2 = nn.LayerNorm(dim)
        self.init_branch(self.token_mix, self.channel_mix)

    def forward(self, x):
        x = self.norm1(self.rescale(x, self.token_mix(x.transpose(1, 2)).transpose(1, 2)))
        x = self.norm2(self.rescale(x, self.channel_mix(x)))
        return x


def build_blocks(cfg):
    arch = cfg.arch.lower()
    if arch == "mixer":
        def make():
            return MixerBlock(cfg.dim, cfg.depth, cfg.tokens, cfg.token_hidden, cfg.channel_hidden)
    elif arch == "resmlp":
        def make():
            return ResMLPBlock(cfg.dim, cfg.depth, cfg.tokens, cfg.channel_hidden)
    else:
        raise ValueError(f"unknown block type {cfg.arch!r}")
    return nn.ModuleList(make() for _ in range(cfg.depth))
