from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch


@dataclass(kw_only=True)
class AttentionMetadata:
    seq_lens_cuda: torch.Tensor
    kv_lens_cuda: torch.Tensor
    kv_cache_manager: Any = None


M = TypeVar("M", bound=AttentionMetadata)


class AttentionBackend(Generic[M]):
    def __init__(
        self,
        layer_idx: int,
        num_heads: int,
        head_dim: int,
        num_kv_heads: int | None = None,
        **kwargs: Any,
    ):
        self.layer_idx = layer_idx
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.num_kv_heads = num_kv_heads or num_heads
