import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        return x * (x.sum() > 0).item()  # ruleid: capture-item-sync

    def describe(self, x):
        return x.sum().item()  # ok: capture-item-sync


class Norm(torch.nn.Module):
    def forward(self, x):
        return x / x.norm()
