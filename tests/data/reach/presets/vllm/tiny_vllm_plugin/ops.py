"""Custom activation registered as a vLLM custom op."""

import torch
import torch.nn.functional as F
from vllm.model_executor.custom_op import CustomOp


@CustomOp.register("tiny_gelu_and_mul")
class TinyGeluAndMul(CustomOp):
    def __init__(self, clamp: float = 30.0) -> None:
        super().__init__()
        self.clamp = torch.tensor(clamp)
        self.clamp_value = float(self.clamp.item())  # ok: capture-item-sync

    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.gelu(x[..., :d], approximate="tanh") * x[..., d:]

    def forward_cuda(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        gate = F.gelu(x[..., :d], approximate="tanh")
        limit = gate.abs().max().item()  # ruleid: capture-item-sync
        return torch.clamp(gate, max=limit) * x[..., d:]
