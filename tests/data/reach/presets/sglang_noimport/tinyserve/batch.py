from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch


class ForwardMode(Enum):
    EXTEND = 1
    DECODE = 2

    def is_decode(self) -> bool:
        return self is ForwardMode.DECODE


@dataclass
class ForwardBatch:
    forward_mode: ForwardMode
    seq_lens: torch.Tensor
    req_pool_indices: torch.Tensor
    out_cache_loc: torch.Tensor
    token_to_kv_pool: Any
    attn_backend: Any
