"""Token-choice mixture-of-experts block for the small serving model."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ExpertMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class TopOneMoE(nn.Module):
    def __init__(self, dim, hidden, num_experts):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(ExpertMLP(dim, hidden) for _ in range(num_experts))

    def route(self, x):
        probs = self.gate(x).softmax(dim=-1)
        weight, choice = probs.max(dim=-1)
        return weight, choice

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        weight, choice = self.route(x)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            gate_e = (weight * (choice == e).to(weight.dtype))[:, None]
            out = out + expert(x) * gate_e
        return out.reshape(shape)


class MoELayer(nn.Module):
    def __init__(self, dim, hidden, num_experts):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.mix = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.moe = TopOneMoE(dim, hidden, num_experts)

    def forward(self, x):
        x = x + self.mix(self.norm1(x))
        return x + self.moe(self.norm2(x))


class MoEEncoder(nn.Module):
    def __init__(self, vocab, dim=128, hidden=256, num_experts=4, depth=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(MoELayer(dim, hidden, num_experts) for _ in range(depth))
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.embed(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.out(h).log_softmax(dim=-1)
