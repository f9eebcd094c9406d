"""A flash-attention-style interface: model code calls flash_attn_with_kvcache inside a captured decode step."""

import torch


def flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=None):
    if cache_seqlens is not None:
        longest = cache_seqlens.max().item()  # ruleid: capture-item-sync
        k_cache = k_cache[:, :longest]
    return torch.softmax(q @ k_cache.transpose(-1, -2), -1) @ v_cache


def get_kernel_info(q):
    return q.abs().max().item()  # ok: capture-item-sync
