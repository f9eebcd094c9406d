"""Reference attention backend for numerics checks against the fused kernels."""

from dataclasses import dataclass

import torch
from tinyengine.attention import AttentionBackend, AttentionMetadata


@dataclass(kw_only=True)
class ReferenceAttentionMetadata(AttentionMetadata):
    max_context: int = 0
    kv_lens_host: torch.Tensor | None = None

    def prepare(self) -> None:
        # Host-side planning before every forward (and before each graph replay).
        self.kv_lens_host = self.kv_lens_cuda.cpu()  # ok: capture-host-copy
        longest = self.seq_lens_cuda.max().item()  # ok: capture-item-sync
        self.max_context = int(longest)


class ReferenceAttention(AttentionBackend[ReferenceAttentionMetadata]):
    Metadata = ReferenceAttentionMetadata

    def __init__(
        self,
        layer_idx: int,
        num_heads: int,
        head_dim: int,
        num_kv_heads: int | None = None,
        **kwargs,
    ) -> None:
        super().__init__(layer_idx, num_heads, head_dim, num_kv_heads, **kwargs)
        self.scale = head_dim**-0.5

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor | None,
        v: torch.Tensor | None,
        metadata: ReferenceAttentionMetadata,
        **kwargs,
    ) -> torch.Tensor:
        cache = metadata.kv_cache_manager.get_buffers(self.layer_idx)
        tokens = metadata.seq_lens_cuda.sum().item()  # ok: capture-item-sync
        keys = cache[:, 0, :tokens]
        values = cache[:, 1, :tokens]
        query = q.view(-1, self.num_heads, self.head_dim).transpose(0, 1)
        group = self.num_heads // self.num_kv_heads
        keys = (
            keys.reshape(-1, self.num_kv_heads, self.head_dim)
            .transpose(0, 1)
            .repeat_interleave(group, dim=0)
        )
        values = (
            values.reshape(-1, self.num_kv_heads, self.head_dim)
            .transpose(0, 1)
            .repeat_interleave(group, dim=0)
        )
        out = torch.nn.functional.scaled_dot_product_attention(
            query, keys, values, scale=self.scale
        )
        return out.transpose(0, 1).reshape(q.shape[0], -1)
