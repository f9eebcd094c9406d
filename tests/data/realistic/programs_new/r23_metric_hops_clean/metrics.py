"""Streaming classification metrics for the evaluation harness."""
import torch


class Metric:
    name = "metric"

    def __init__(self):
        self._defaults = {}

    def add_state(self, name, default):
        self._defaults[name] = default
        setattr(self, name, default.clone() if isinstance(default, torch.Tensor) else default)

    def to(self, device):
        for name in self._defaults:
            value = getattr(self, name)
            if isinstance(value, torch.Tensor):
                setattr(self, name, value.to(device))
        return self

    def reset(self):
        for name, default in self._defaults.items():
            value = getattr(self, name)
            if isinstance(value, torch.Tensor):
                value.zero_()
            else:
                setattr(self, name, default)

    def update(self, logits, target):
        raise NotImplementedError

    def compute(self):
        raise NotImplementedError


class Accuracy(Metric):
    name = "acc"

    def __init__(self):
        super().__init__()
        self.add_state("correct", torch.zeros((), dtype=torch.long))
        self.add_state("total", torch.zeros((), dtype=torch.long))

    def update(self, logits, target):
        self.correct.add_((logits.argmax(dim=-1) == target).sum())
        self.total.add_(target.numel())

    def compute(self):
        return float(self.correct / self.total.clamp(min=1))


class TopK(Metric):
    def __init__(self, k=5):
        super().__init__()
        self.k = k
        self.name = f"top{k}"
        self.add_state("hits", torch.zeros((), dtype=torch.long))
        self.add_state("total", torch.zeros((), dtype=torch.long))

    def update(self, logits, target):
        top = logits.topk(self.k, dim=-1).indices
        self.hits.add_((top == target[:, None]).any(dim=-1).sum())
        self.total.add_(target.numel())

    def compute(self):
        return float(self.hits / self.total.clamp(min=1))


def summarize(metrics):
    return {m.name: m.compute() for m in metrics}
