"""Small helpers around torch.cuda.CUDAGraph shared by the training scripts."""
import contextlib
import logging
import time

import torch

logger = logging.getLogger("noisy.graphs")


def side_stream_warmup(fn, steps):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for step in steps:
            fn(step)
    torch.cuda.current_stream().wait_stream(s)


@contextlib.contextmanager
def recording(graph, pool=None):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        graph.capture_begin(pool=pool)
        try:
            yield graph
        finally:
            graph.capture_end()
    torch.cuda.current_stream().wait_stream(stream)


class StepGraph:
    """One captured callable plus the tensors it returned while being recorded."""

    def __init__(self, pool=None, generators=()):
        self.graph = torch.cuda.CUDAGraph()
        self.pool = pool
        for gen in generators:
            self.graph.register_generator_state(gen)
        self.outputs = None

    def _record(self, step_fn):
        with recording(self.graph, self.pool):
            self.outputs = step_fn()
        return self.outputs

    def replay(self):
        self.graph.replay()
        return self.outputs


def capture_step(runner, step_fn):
    t0 = time.perf_counter()
    out = runner._record(step_fn)
    torch.cuda.synchronize()
    logger.info("recorded training step in %.1f ms", (time.perf_counter() - t0) * 1e3)
    return out
