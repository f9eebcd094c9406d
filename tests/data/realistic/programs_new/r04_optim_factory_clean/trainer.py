"""Whole-step CUDA-graph trainer: forward, backward and optimizer step in one graph."""
import logging

import torch
import torch.nn.functional as F

logger = logging.getLogger("regress.trainer")


class GraphedTrainer:
    def __init__(self, model, optimizer, example_x, example_y, warmup_steps=3):
        self.model = model
        self.optimizer = optimizer
        self.warmup_steps = warmup_steps
        self.static_x = example_x.clone()
        self.static_y = example_y.clone()
        self.static_loss = None
        self.graph = None

    def step_fn(self):
        pred = self.model(self.static_x)
        loss = F.smooth_l1_loss(pred, self.static_y)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def warmup(self, batches):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for x, y in batches[: self.warmup_steps]:
                self.static_x.copy_(x)
                self.static_y.copy_(y)
                self.optimizer.zero_grad(set_to_none=True)
                self.step_fn()
        torch.cuda.current_stream().wait_stream(s)

    def capture(self):
        self.optimizer.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self.step_fn()
        logger.info("captured whole training step")

    def train_step(self, x, y):
        self.static_x.copy_(x)
        self.static_y.copy_(y)
        self.graph.replay()
        return self.static_loss
