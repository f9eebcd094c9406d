import torch


def postprocess(y: torch.Tensor) -> torch.Tensor:
    return y / y.abs().amax().clamp(min=1e-6)
