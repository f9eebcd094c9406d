"""Learning-rate schedules that write straight into the optimizer's param groups."""
import math


class WarmupCosine:
    def __init__(self, optimizer, warmup, total, min_ratio=0.1):
        self.optimizer = optimizer
        self.warmup = warmup
        self.total = total
        self.min_ratio = min_ratio
        self.base = [self._value(g["lr"]) for g in optimizer.param_groups]
        self.step_num = 0
        self._apply()

    @staticmethod
    def _value(lr):
        return float(lr)

    def factor(self, step):
        if step < self.warmup:
            return (step + 1) / self.warmup
        t = (step - self.warmup) / max(1, self.total - self.warmup)
        return self.min_ratio + (1 - self.min_ratio) * 0.5 * (1 + math.cos(math.pi * min(t, 1.0)))

    def _apply(self):
        f = self.factor(self.step_num)
        for g, base in zip(self.optimizer.param_groups, self.base):
            g["lr"] = base * f

    def step(self):
        self.step_num += 1
        self._apply()

    def current(self):
        return self._value(self.optimizer.param_groups[0]["lr"])
