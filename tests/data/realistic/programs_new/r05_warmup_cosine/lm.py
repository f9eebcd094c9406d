"""Fixed-context next-token model (embeddings of the last k tokens, then an MLP)."""
import torch.nn as nn
import torch.nn.functional as F


class WindowLM(nn.Module):
    def __init__(self, vocab=512, context=8, dim=64, hidden=512):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.fc1 = nn.Linear(context * dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ctx):
        h = self.embed(ctx).flatten(1)
        h = F.gelu(self.fc1(h))
        h = h + F.gelu(self.fc2(h))
        return self.out(h)


def lm_loss(model, ctx, target):
    return F.cross_entropy(model(ctx), target)
