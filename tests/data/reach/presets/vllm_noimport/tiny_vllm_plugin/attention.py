"""A small paged-attention backend for the plugin model (decode kernel + metadata builder)."""

from dataclasses import dataclass
from typing import ClassVar

import torch
from tinyfw.attention import (
    AttentionBackend,
    AttentionCGSupport,
    AttentionImpl,
    AttentionMetadata,
    AttentionMetadataBuilder,
    CommonAttentionMetadata,
)


@dataclass
class TinyAttentionMetadata(AttentionMetadata):
    seq_lens: torch.Tensor
    block_table: torch.Tensor
    slot_mapping: torch.Tensor
    max_seq_len: int


class TinyAttentionMetadataBuilder(AttentionMetadataBuilder[TinyAttentionMetadata]):
    # Full CUDA graphs for single-token decode batches.
    _cudagraph_support: ClassVar[AttentionCGSupport] = (
        AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE
    )

    def build(
        self,
        common_prefix_len: int,
        common_attn_metadata: CommonAttentionMetadata,
        fast_build: bool = False,
    ) -> TinyAttentionMetadata:
        # Runs on the host before the model call, outside the graph.
        longest = int(common_attn_metadata.seq_lens.max().item())  # ok: capture-item-sync
        return TinyAttentionMetadata(
            seq_lens=common_attn_metadata.seq_lens,
            block_table=common_attn_metadata.block_table_tensor,
            slot_mapping=common_attn_metadata.slot_mapping,
            max_seq_len=longest,
        )


class TinyAttentionImpl(AttentionImpl[TinyAttentionMetadata]):
    def __init__(
        self,
        num_heads: int,
        head_size: int,
        scale: float,
        num_kv_heads: int | None = None,
        alibi_slopes: list[float] | None = None,
        sliding_window: int | None = None,
        kv_cache_dtype: str = "auto",
        logits_soft_cap: float | None = None,
        attn_type: str = "decoder",
        kv_sharing_target_layer_name: str | None = None,
    ) -> None:
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = scale
        self.num_kv_heads = num_kv_heads or num_heads
        self.kv_cache_dtype = kv_cache_dtype
        self.soft_cap = torch.tensor(logits_soft_cap or 0.0)
        self.soft_cap_cpu = self.soft_cap.cpu()  # ok: capture-host-copy

    def forward(
        self,
        layer: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        kv_cache: torch.Tensor,
        attn_metadata: TinyAttentionMetadata,
        output: torch.Tensor,
        output_scale: torch.Tensor | None = None,
        output_block_scale: torch.Tensor | None = None,
    ) -> torch.Tensor:
        key_cache, value_cache = kv_cache.unbind(0)
        key_cache.view(-1, self.num_kv_heads, self.head_size).index_copy_(
            0, attn_metadata.slot_mapping, key.view(-1, self.num_kv_heads, self.head_size)
        )
        value_cache.view(-1, self.num_kv_heads, self.head_size).index_copy_(
            0, attn_metadata.slot_mapping, value.view(-1, self.num_kv_heads, self.head_size)
        )
        longest = attn_metadata.seq_lens.max().item()  # ok: capture-item-sync
        pages = attn_metadata.block_table.flatten()
        keys = key_cache.index_select(0, pages).view(
            query.shape[0], -1, self.num_kv_heads, self.head_size
        )
        values = value_cache.index_select(0, pages).view(
            query.shape[0], -1, self.num_kv_heads, self.head_size
        )
        q = query.view(-1, 1, self.num_heads, self.head_size).transpose(1, 2)
        group = self.num_heads // self.num_kv_heads
        k = keys[:, :longest].transpose(1, 2).repeat_interleave(group, dim=1)
        v = values[:, :longest].transpose(1, 2).repeat_interleave(group, dim=1)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=self.scale)
        output.copy_(out.transpose(1, 2).reshape(output.shape))
        return output


class TinyAttentionBackend(AttentionBackend):
    @staticmethod
    def get_name() -> str:
        return "TINY_PAGED"

    @staticmethod
    def get_impl_cls() -> type[TinyAttentionImpl]:
        return TinyAttentionImpl

    @staticmethod
    def get_builder_cls() -> type[TinyAttentionMetadataBuilder]:
        return TinyAttentionMetadataBuilder

    @staticmethod
    def get_kv_cache_shape(
        num_blocks: int,
        block_size: int,
        num_kv_heads: int,
        head_size: int,
        cache_dtype_str: str = "auto",
    ) -> tuple[int, ...]:
        return (2, num_blocks, block_size, num_kv_heads, head_size)
