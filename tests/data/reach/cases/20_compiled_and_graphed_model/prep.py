import torch


def normalise_(x: torch.Tensor) -> torch.Tensor:
    return x.div_(x.norm(dim=-1, keepdim=True).clamp(min=1e-6))  # ruleid: compile-skip-cudagraphs
