"""Whole-step trainer: forward, loss, backward and optimizer step recorded in one CUDA graph."""
import logging

import torch

from tiny_lm import lm_loss

logger = logging.getLogger("tinylm.trainer")


class WholeStepTrainer:
    def __init__(self, model, optimizer, example_x, example_y, warmup_iters=3):
        self.model = model
        self.optimizer = optimizer
        self.warmup_iters = warmup_iters
        self.static_x = example_x.clone()
        self.static_y = example_y.clone()
        self.static_loss = None
        self.graph = None

    def _load(self, x, y):
        self.static_x.copy_(x)
        self.static_y.copy_(y)

    def _step(self):
        logits = self.model(self.static_x)
        loss = lm_loss(logits, self.static_y)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def eager_step(self, x, y):
        self._load(x, y)
        self.optimizer.zero_grad(set_to_none=True)
        return self._step()

    def capture(self, warmup_batches):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for x, y in warmup_batches[: self.warmup_iters]:
                self.eager_step(x, y)
        torch.cuda.current_stream().wait_stream(s)
        self.optimizer.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self._step()
        logger.info("recorded the training step (%d warm-up iterations)", self.warmup_iters)

    def train_step(self, x, y):
        self._load(x, y)
        self.graph.replay()
        return self.static_loss
