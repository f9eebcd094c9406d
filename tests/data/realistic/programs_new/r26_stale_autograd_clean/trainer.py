"""Trainer with an eager warm-up phase followed by whole-step CUDA-graph replay."""
import logging

import torch

from progress import progress

logger = logging.getLogger("regress.trainer")


class Trainer:
    def __init__(self, model, optimizer, loss_fn, example_x, example_y, log_every=2):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.log_every = log_every
        self.static_x = example_x.clone()
        self.static_y = example_y.clone()
        self.static_loss = None
        self.graph = None
        self.last_loss = None
        self.step = 0

    def _eager_step(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss

    def _static_step(self):
        pred = self.model(self.static_x)
        loss = self.loss_fn(pred, self.static_y)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def warmup(self, batches):
        for x, y in progress(batches, desc="eager", unit="step"):
            self.last_loss = self._eager_step(x, y).detach()
            if self.step % self.log_every == 0:
                logger.info("step %4d  loss %.5f  (eager)", self.step, self.last_loss.item())
            self.step += 1
        return self

    def capture(self, batches):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for x, y in batches:
                self.static_x.copy_(x)
                self.static_y.copy_(y)
                self.optimizer.zero_grad(set_to_none=True)
                self._static_step()
                self.step += 1
        torch.cuda.current_stream().wait_stream(s)
        logger.info("step %d: capturing forward+backward+step", self.step)
        self.optimizer.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self._static_step()
        return self

    def replay(self, x, y):
        self.static_x.copy_(x)
        self.static_y.copy_(y)
        self.graph.replay()
        self.step += 1
        return self.static_loss
