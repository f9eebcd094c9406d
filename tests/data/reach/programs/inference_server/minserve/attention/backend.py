"""Decode attention over a paged KV cache."""

from dataclasses import dataclass

import torch
from torch.nn import functional as F


@dataclass
class AttentionMetadata:
    seq_lens: torch.Tensor  # [batch], int32 on the device
    block_tables: torch.Tensor  # [batch, max_blocks]
    slot_mapping: torch.Tensor  # [batch]


class PagedAttention:
    def __init__(self, heads: int, head_dim: int, block_size: int = 16) -> None:
        self.heads = heads
        self.head_dim = head_dim
        self.block_size = block_size

    def forward(self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                meta: AttentionMetadata) -> torch.Tensor:
        # the longest context in the batch bounds the gather
        max_len = meta.seq_lens.max().item()  # ruleid: capture-item-sync
        n_blocks = (max_len + self.block_size - 1) // self.block_size
        blocks = meta.block_tables[:, :n_blocks]
        k = k_cache[blocks].flatten(1, 2)
        v = v_cache[blocks].flatten(1, 2)
        return F.scaled_dot_product_attention(q.unsqueeze(2), k.transpose(1, 2), v.transpose(1, 2)).squeeze(2)
