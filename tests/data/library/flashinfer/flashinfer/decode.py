"""A FlashInfer-style decode wrapper: plan() on the host, run() captured by the serving engine's graph."""

import torch


class BatchDecodeWithPagedKVCacheWrapper:
    def __init__(self, workspace, use_cuda_graph=False):
        self._workspace = workspace
        self._use_cuda_graph = use_cuda_graph
        self._indptr = None

    def plan(self, indptr, indices, last_page_len):
        self._max_len = int(indptr[-1].item())  # ok: capture-item-sync
        self._indptr = indptr

    def run(self, q, kv_cache, out=None):
        if out is None:
            out = torch.empty_like(q)
        scale = float(q.abs().max())  # ruleid: capture-item-sync
        out.copy_(q / scale)
        return out
