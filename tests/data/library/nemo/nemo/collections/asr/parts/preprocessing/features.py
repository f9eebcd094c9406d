"""A NeMo-style filterbank: users capture the preprocessor with the encoder (NeMo issue #8948)."""

import torch
from torch import nn

from nemo.collections.asr.modules import rnnt_abstract  # noqa: F401  (a NeMo module imports NeMo)


class FilterbankFeatures(nn.Module):
    def __init__(self, pad_value=0.0):
        super().__init__()
        self.pad_value = pad_value

    def forward(self, x, seq_len):
        max_len = x.size(-1)
        mask = torch.arange(max_len).to(x.device)  # ruleid: capture-host-copy
        mask = mask.repeat(x.size(0), 1) >= seq_len.unsqueeze(1)
        return x.masked_fill(mask.unsqueeze(1), self.pad_value), seq_len

    def log_stats(self, x):
        return torch.arange(4).to(x.device)  # ok: capture-host-copy
