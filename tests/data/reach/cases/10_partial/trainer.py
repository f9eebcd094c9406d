import functools

import torch
from nets import Tiny
from steps import train_step


class Trainer:
    def __init__(self) -> None:
        self.model = Tiny().cuda()
        self.step = functools.partial(train_step, self.model, clip=1.0)
        self.static_batch = torch.randn(16, 8, device="cuda")
        self.graph = torch.cuda.CUDAGraph()

    def capture(self) -> torch.Tensor:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.step(self.static_batch)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(self.graph):
            loss = self.step(self.static_batch)
        return loss


if __name__ == "__main__":
    t = Trainer()
    out = t.capture()
    t.graph.replay()
