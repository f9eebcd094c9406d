import torch
from einops_like import checkpointed
from registry import register, timed


@register("normalise")
def normalise(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm().item()  # ruleid: capture-item-sync


@timed
def project(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x @ w
    host = y.cpu()  # ruleid: capture-host-copy
    return y + host.sum()


@checkpointed(segments=2)
def mix(x: torch.Tensor) -> torch.Tensor:
    torch.cuda.synchronize()  # ruleid: capture-explicit-sync
    return x.flip(0) + x


@torch.no_grad()
def update_ema(ema: torch.Tensor, x: torch.Tensor) -> None:
    ema.mul_(0.9).add_(x, alpha=0.1)
    print(ema)  # ruleid: capture-print-tensor
