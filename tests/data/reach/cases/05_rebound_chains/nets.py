import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, dim: int, classes: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.fc(x)
        top = logits.argmax(-1).cpu()  # ruleid: capture-host-copy
        return logits + top.to(logits.device).unsqueeze(-1)  # ruleid: capture-host-copy


class Ranker(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.score = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.score(x)
        best = s.max().item()  # ruleid: capture-item-sync
        return s - best


class Pooler(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.cuda.synchronize()  # ruleid: capture-explicit-sync
        return x.mean(0)
