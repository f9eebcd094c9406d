"""Whole-step CUDA-graph trainer: forward, backward and SGD step replayed as one graph."""
import logging
import time

import torch
import torch.nn.functional as F

from progress import progress

log = logging.getLogger("glyphs.trainer")


class Trainer:
    def __init__(self, model, opt, sched, example, warmup_steps=3, log_every=2):
        self.model = model
        self.opt = opt
        self.sched = sched
        self.warmup_steps = warmup_steps
        self.log_every = log_every
        self.static_x = example[0].clone()
        self.static_y = example[1].clone()
        self.static_loss = None
        self.graph = None
        self.captured_lr = None

    def _step(self):
        logits = self.model(self.static_x)
        loss = F.cross_entropy(logits, self.static_y)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def warmup(self, batches):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for x, y in batches[: self.warmup_steps]:
                self.static_x.copy_(x)
                self.static_y.copy_(y)
                self.opt.zero_grad(set_to_none=True)
                self._step()
        torch.cuda.current_stream().wait_stream(s)

    def capture(self):
        self.opt.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self._step()
        self.captured_lr = self.opt.param_groups[0]["lr"]
        log.info("captured training step (lr %.4g)", self.captured_lr)

    def train_epoch(self, epoch, batches, start=0):
        t0 = time.perf_counter()
        logged = []
        for i in progress(range(start, len(batches)), desc=f"epoch {epoch}", unit="step"):
            x, y = batches[i]
            self.static_x.copy_(x)
            self.static_y.copy_(y)
            self.graph.replay()
            if i % self.log_every == 0:
                logged.append(self.static_loss.item())
                log.info("epoch %d step %3d  loss %.4f  lr %.4g  %.0f img/s", epoch, i, logged[-1],
                         self.opt.param_groups[0]["lr"], (i + 1 - start) * x.shape[0] / (time.perf_counter() - t0))
        return sum(logged) / max(1, len(logged))

    def end_epoch(self):
        self.sched.step()
        if self.opt.param_groups[0]["lr"] != self.captured_lr:
            self.capture()
        return self.opt.param_groups[0]["lr"]
