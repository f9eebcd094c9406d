"""A generic graph-capture helper: the module to capture arrives as a parameter."""

import torch
from blocks import BaseBlock


class GraphEngine:
    def __init__(self) -> None:
        self.graphs: dict[str, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[str, torch.Tensor] = {}

    def capture(self, name, module, static_x):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                module(static_x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.outputs[name] = module(static_x)
        self.graphs[name] = g

    def capture_typed(self, name: str, block: BaseBlock, static_x: torch.Tensor) -> None:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            block(static_x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.outputs[name] = block(static_x)
        self.graphs[name] = g
