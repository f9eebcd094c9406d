"""optim-capturable-float-lr where the optimizer is built in another file (a factory) and stepped in the captured
step of a trainer that also steps a scheduler (realistic r24: SGD built in train_cnn.py, stepped as self.opt in
trainer.py, StepLR from a factory in schedules.py). A warning: the scheduler stepping beside it is most likely its
own. A trainer that captures again when the lr changes keeps each lr in its own graph: nothing."""

from __future__ import annotations

from tests.source.helpers import workspace_flags

SETUP = '''import torch


def make_optimizer(model, lr):
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def make_scheduler(opt, kind):
    if kind == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=4)
    return torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[4, 8])
'''

TRAINER = '''import torch


class Trainer:
    def __init__(self, model, opt, sched, x):
        self.model = model
        self.opt = opt
        self.sched = sched
        self.x = x
        self.lr = None

    def capture(self):
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.model(self.x).sum().backward()
            self.opt.step()
        self.lr = self.opt.param_groups[0]["lr"]

    def end_epoch(self):
        {sched}
'''

MAIN = '''import torch
from setup import make_optimizer, make_scheduler
from trainer import Trainer


def main():
    model = torch.nn.Linear(4, 4).cuda()
    opt = make_optimizer(model, 0.1)
    t = Trainer(model, opt, make_scheduler(opt, "step"), torch.ones(2, 4, device="cuda"))
    t.capture()
    for _ in range(3):
        t.graph.replay()
        t.end_epoch()
'''


def _lr(sched: str) -> set[tuple[str, int, str]]:
    files = {"setup.py": SETUP, "trainer.py": TRAINER.format(sched=sched), "main.py": MAIN}
    return {f for f in workspace_flags(files) if f[2] == "optim-capturable-float-lr"}


def test_a_factory_built_optimizer_beside_a_stepping_scheduler_is_flagged() -> None:
    assert _lr("self.sched.step()") == {("trainer.py", 16, "optim-capturable-float-lr")}


def test_a_recapture_when_the_lr_changes_keeps_it_quiet() -> None:
    again = 'self.sched.step()\n        if self.opt.param_groups[0]["lr"] != self.lr:\n            self.capture()'
    assert _lr(again) == set()


def test_no_scheduler_stepping_in_the_trainer_keeps_it_quiet() -> None:
    assert _lr("pass") == set()
