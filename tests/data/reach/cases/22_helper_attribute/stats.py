import torch


class RunningStats:
    def __init__(self) -> None:
        self.count = 0
        self.mean = torch.zeros((), device="cuda")

    def update(self, x: torch.Tensor) -> None:
        self.mean.lerp_(x.mean(), 0.01)
        if self.mean.item() > 100:  # ruleid: capture-item-sync
            self.mean.zero_()
