import torch

from .model import Transformer


def multinomial_sample_one(probs: torch.Tensor) -> torch.Tensor:
    q = torch.empty_like(probs).exponential_(1)
    return torch.argmax(probs / q, dim=-1, keepdim=True).to(dtype=torch.int)


def sample(logits: torch.Tensor, temperature: float = 0.8) -> tuple[torch.Tensor, torch.Tensor]:
    probs = torch.softmax(logits[0, -1] / max(temperature, 1e-5), dim=-1)
    return multinomial_sample_one(probs), probs


def prefill(model: Transformer, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    # padding ids (-1) become 0; compiled without CUDA graphs (dynamic=True, default mode), so writing into
    # an input is fine here
    x.clamp_(min=0)  # ok: compile-skip-cudagraphs
    logits = model(x, input_pos)
    return sample(logits)[0]


def decode_one_token(model: Transformer, x: torch.Tensor, input_pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    logits = model(x, input_pos)
    return sample(logits)
