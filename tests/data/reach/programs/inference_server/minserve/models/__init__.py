from torch import nn

from ..config import ModelConfig
from .llama import LlamaForCausalLM


def get_model(cfg: ModelConfig) -> nn.Module:
    model = LlamaForCausalLM(cfg)
    return model.to(dtype=cfg.dtype).cuda().eval()
