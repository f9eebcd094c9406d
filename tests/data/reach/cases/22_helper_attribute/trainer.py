import torch
from stats import RunningStats
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.helper = RunningStats()
        self.static_x = torch.randn(32, 16, device="cuda")
        self.graph = torch.cuda.CUDAGraph()

    def train_step(self) -> torch.Tensor:
        loss = self.model(self.static_x).pow(2).mean()
        loss.backward()
        self.helper.update(loss.detach())
        return loss

    def capture(self) -> torch.Tensor:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.train_step()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(self.graph):
            loss = self.train_step()
        return loss


if __name__ == "__main__":
    trainer = Trainer(nn.Linear(16, 1).cuda())
    static_loss = trainer.capture()
    trainer.graph.replay()
