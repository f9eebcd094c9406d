"""A NeMo-style joint: the label-looping CUDA-graph decoder captures joint_after_projection."""

import torch

from nemo.collections.asr.modules import rnnt_abstract


class RNNTJoint(rnnt_abstract.AbstractRNNTJoint):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def joint_after_projection(self, f, g):
        out = f + g
        if out.isnan().any():  # ruleid: capture-implicit-bool
            out = torch.nan_to_num(out)
        return out

    def num_params(self):
        return sum(p.numel() for p in self.parameters()) + int(torch.ones(1).sum().item())  # ok: capture-item-sync
