from dataclasses import dataclass, field

import torch


@dataclass
class ModelConfig:
    arch: str = "llama"
    vocab: int = 32000
    hidden: int = 1024
    heads: int = 8
    layers: int = 8
    dtype: torch.dtype = torch.float16


@dataclass
class EngineConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    max_batch: int = 64
    enforce_eager: bool = False
    graph_batch_sizes: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64])
