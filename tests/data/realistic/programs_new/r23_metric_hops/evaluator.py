"""Evaluation loop that replays one captured forward-and-metrics step per batch."""
import logging
import time

import torch

from metrics import summarize
from progress import progress

log = logging.getLogger("evalh.evaluator")


class GraphedEvalStep:
    def __init__(self, model, metrics, example, warmup=3):
        self.model = model
        self.metrics = metrics
        self.warmup = warmup
        self.static_x = example[0].clone()
        self.static_y = example[1].clone()
        self.static_logits = None
        self.graph = None

    def _warmup(self):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(self.warmup):
                logits = self.model(self.static_x)
                for m in self.metrics:
                    m.update(logits, self.static_y)
        torch.cuda.current_stream().wait_stream(s)

    def capture(self):
        self._warmup()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_logits = self.model(self.static_x)
            for m in self.metrics:
                m.update(self.static_logits, self.static_y)
        return self

    def __call__(self, x, y):
        self.static_x.copy_(x)
        self.static_y.copy_(y)
        self.graph.replay()
        return self.static_logits


class Evaluator:
    def __init__(self, model, metrics, warmup=3, log_every=2):
        self.model = model
        self.metrics = metrics
        self.warmup = warmup
        self.log_every = log_every
        self.step = None

    def prepare(self, example):
        log.info("capturing eval step for batch shape %s (%d metrics)", tuple(example[0].shape), len(self.metrics))
        self.step = GraphedEvalStep(self.model, self.metrics, example, warmup=self.warmup).capture()
        for m in self.metrics:
            m.reset()
        log.info("eval step captured")

    @torch.no_grad()
    def run(self, batches):
        if self.step is None:
            self.prepare(batches[0])
        t0 = time.perf_counter()
        bar = progress(batches, desc="eval", unit="batch")
        for i, (x, y) in enumerate(bar):
            self.step(x, y)
            if i % self.log_every == 0:
                running = summarize(self.metrics)
                log.info("batch %4d  %s  %.0f samples/s", i, "  ".join(f"{k} {v:.4f}" for k, v in running.items()),
                         (i + 1) * x.shape[0] / (time.perf_counter() - t0))
        torch.cuda.synchronize()
        return summarize(self.metrics)
