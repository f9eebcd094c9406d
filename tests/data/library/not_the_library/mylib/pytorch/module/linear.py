"""A TE-style linear module: the module's forward runs an autograd Function; users capture both halves with
make_graphed_callables."""

import torch


def _amax_history_ok(t):
    return bool(torch.isfinite(t).all())  # ok: capture-item-sync


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, weight, amax):
        ctx.save_for_backward(inp, weight)
        if not _amax_history_ok(amax):
            amax.zero_()
        return inp @ weight.t()

    @staticmethod
    def backward(ctx, grad_out):
        inp, weight = ctx.saved_tensors
        scale = grad_out.abs().max().item()  # ok: capture-item-sync
        return grad_out @ weight / scale, grad_out.t() @ inp, None


class Linear(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n, n))
        self.amax = torch.zeros(16)

    def forward(self, inp):
        return _Linear.apply(inp, self.weight, self.amax)

    def extra_repr(self):
        return f"norm={self.weight.norm().item()}"  # ok: capture-item-sync
