"""Captured forward+backward; the optimizer step runs eagerly after each replay."""
import torch
import torch.nn.functional as F


class FwdBwdGraph:
    def __init__(self, model, example_x, example_y):
        self.model = model
        self.static_x = example_x.clone()
        self.static_y = example_y.clone()
        self.graph = None
        self.static_loss = None

    def _loss(self):
        return F.cross_entropy(self.model(self.static_x), self.static_y)

    def capture(self, optimizer, warmup=3):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(warmup):
                optimizer.zero_grad(set_to_none=True)
                self._loss().backward()
        torch.cuda.current_stream().wait_stream(s)
        optimizer.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self._loss()
            self.static_loss.backward()

    def run(self, x, y):
        self.static_x.copy_(x)
        self.static_y.copy_(y)
        self.graph.replay()
        return self.static_loss
