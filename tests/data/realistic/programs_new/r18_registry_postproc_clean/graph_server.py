"""Serve a fixed-shape model by replaying one captured CUDA graph."""
import logging

import torch

logger = logging.getLogger("detserve.graph")


class CudaGraphServer:
    def __init__(self, model, warmup_iters=3):
        self.model = model
        self.warmup_iters = warmup_iters
        self.graph = None
        self.static_images = None
        self.static_outputs = None

    @property
    def ready(self):
        return self.graph is not None

    def capture(self, example):
        self.static_images = example.clone()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(self.warmup_iters):
                self.model(self.static_images)
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_outputs = self.model(self.static_images)
        logger.info("captured graph for input %s, %d outputs", tuple(example.shape), len(self.static_outputs))

    def infer(self, images):
        self.static_images.copy_(images)
        self.graph.replay()
        return tuple(t.clone() for t in self.static_outputs)
