"""Helpers around torch.cuda.CUDAGraph used by the streaming jobs."""
import contextlib

import torch


def side_stream_warmup(fn, *args, iters=3):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(iters):
            fn(*args)
    torch.cuda.current_stream().wait_stream(s)


@contextlib.contextmanager
def graph_capture(graph, pool=None):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        graph.capture_begin(pool=pool)
        try:
            yield graph
        finally:
            graph.capture_end()
    torch.cuda.current_stream().wait_stream(stream)
