"""One CUDA graph per batch size, captured largest first so the smaller ones reuse its pool."""

import logging

import torch

from .attention import AttentionMetadata
from .model_runner import ModelRunner

log = logging.getLogger(__name__)


class CUDAGraphRunner:
    def __init__(self, runner: ModelRunner, batch_sizes: list[int]) -> None:
        self.runner = runner
        self.batch_sizes = sorted(batch_sizes, reverse=True)
        n = self.batch_sizes[0]
        self.input_ids = torch.zeros(n, dtype=torch.long, device="cuda")
        self.seq_lens = torch.ones(n, dtype=torch.int32, device="cuda")
        self.block_tables = torch.zeros(n, 64, dtype=torch.long, device="cuda")
        self.slot_mapping = torch.zeros(n, dtype=torch.long, device="cuda")
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[int, torch.Tensor] = {}
        self.pool = None

    def _meta(self, bs: int) -> AttentionMetadata:
        return AttentionMetadata(self.seq_lens[:bs], self.block_tables[:bs], self.slot_mapping[:bs])

    def capture_all(self) -> None:
        for bs in self.batch_sizes:
            meta = self._meta(bs)
            self.runner.forward(self.input_ids[:bs], meta)  # warm-up, eager
            torch.cuda.synchronize()  # ok: capture-explicit-sync
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, self.pool):
                self.outputs[bs] = self.runner.forward(self.input_ids[:bs], meta)
            if self.pool is None:
                self.pool = graph.pool()
            self.graphs[bs] = graph
            log.info("captured batch size %d", bs)

    def replay(self, input_ids: torch.Tensor, meta: AttentionMetadata) -> torch.Tensor:
        bs = next(b for b in reversed(self.batch_sizes) if b >= input_ids.size(0))
        n = input_ids.size(0)
        self.input_ids[:n].copy_(input_ids)
        self.seq_lens[:n].copy_(meta.seq_lens)
        self.block_tables[:n, : meta.block_tables.size(1)].copy_(meta.block_tables)
        self.slot_mapping[:n].copy_(meta.slot_mapping)
        self.graphs[bs].replay()
        return self.outputs[bs][:n]
