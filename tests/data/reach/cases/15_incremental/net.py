import torch
from post import postprocess
from torch import nn


class Net(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return postprocess(self.fc(x))
