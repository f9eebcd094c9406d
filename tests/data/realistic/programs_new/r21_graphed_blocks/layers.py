"""Building blocks shared by the token-mixing models."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class NormalizedBlock(nn.Module):
    """Post-norm residual block with DeepNet residual scaling.

    The residual stream is up-weighted by gamma and the branch output by beta,
    both derived from the total depth, so that deep stacks train without warm-up.
    """

    def __init__(self, dim, depth):
        super().__init__()
        self.dim = dim
        self.depth = depth
        self.gamma = (2.0 * depth) ** 0.25
        self.beta = (8.0 * depth) ** -0.25

    def init_branch(self, *branches):
        for branch in branches:
            for m in branch.modules():
                if isinstance(m, nn.Linear):
                    nn.init.xavier_normal_(m.weight, gain=self.beta)
                    nn.init.zeros_(m.bias)

    def rescale(self, x, update):
        gain = torch.tensor([self.gamma, self.beta], device=x.device, dtype=x.dtype)
        return x * gain[0] + update * gain[1]

    def extra_repr(self):
        return f"dim={self.dim}, depth={self.depth}, gamma={self.gamma:.3f}, beta={self.beta:.3f}"
