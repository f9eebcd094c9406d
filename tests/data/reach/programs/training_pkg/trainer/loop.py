"""The training step and its CUDA-graph capture."""

import logging

import torch
from torch.nn import functional as F

from .metrics import GradMonitor, Metrics
from .model import GPT, GPTConfig
from .optim import build_optimizer

log = logging.getLogger(__name__)


class Trainer:
    def __init__(self, cfg: GPTConfig, lr: float, batch: int, log_every: int) -> None:
        self.model = GPT(cfg).cuda().train()
        self.opt = build_optimizer(self.model, lr)
        self.metrics = Metrics(log_every)
        self.monitor = GradMonitor(self.model)
        self.static_idx = torch.zeros(batch, cfg.max_len, dtype=torch.long, device="cuda")
        self.static_tgt = torch.zeros(batch, cfg.max_len, dtype=torch.long, device="cuda")
        self.static_len = torch.full((batch,), cfg.max_len, dtype=torch.long, device="cuda")
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_loss: torch.Tensor | None = None

    def step(self) -> torch.Tensor:
        logits = self.model(self.static_idx, self.static_len)
        loss = F.cross_entropy(logits.flatten(0, 1), self.static_tgt.flatten())
        loss.backward()
        self.monitor.check()
        self.opt.step()  # ruleid: optim-capturable-false
        self.metrics.observe(loss)
        return loss

    def capture(self, warmup: int = 3) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                self.opt.zero_grad(set_to_none=True)
                self.step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.static_loss = self.step()
        log.info("captured the training step")

    def train_on(self, idx: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        assert self.graph is not None and self.static_loss is not None
        self.static_idx.copy_(idx)
        self.static_tgt.copy_(tgt)
        self.graph.replay()
        self.metrics.record(self.static_loss)
        return self.static_loss
