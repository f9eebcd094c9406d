import logging

import torch

from .attention import AttentionMetadata
from .config import EngineConfig
from .cuda_graph import CUDAGraphRunner
from .model_runner import ModelRunner

log = logging.getLogger(__name__)


class LLMEngine:
    def __init__(self, cfg: EngineConfig) -> None:
        self.cfg = cfg
        self.runner = ModelRunner(cfg)
        self.runner.profile_run()
        self.graph_runner: CUDAGraphRunner | None = None
        if not cfg.enforce_eager:
            self.graph_runner = CUDAGraphRunner(self.runner, cfg.graph_batch_sizes)
            self.graph_runner.capture_all()

    def decode(self, input_ids: torch.Tensor, meta: AttentionMetadata) -> list[int]:
        if self.graph_runner is not None and input_ids.size(0) <= self.cfg.max_batch:
            logits = self.graph_runner.replay(input_ids, meta)
        else:
            logits = self.runner.forward(input_ids, meta)
        next_ids = torch.argmax(logits, dim=-1)
        return next_ids.cpu().tolist()  # ok: capture-host-copy
