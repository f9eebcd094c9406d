"""lazy-init-cublas when the warm-up runs in the caller of the capturing method: `trainer.warmup(); trainer.capture()`
(realistic r04's GraphedTrainer). A caller that captures without warming keeps the error."""

from __future__ import annotations

from pathlib import Path

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace

TRAINER = """\
import torch


class Trainer:
    def __init__(self, w):
        self.w = w

    def step_fn(self):
        return torch.matmul(self.w, self.w)

    def warmup(self):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            self.step_fn()

    def other(self):
        return None

    def capture(self):
        self.g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.g):
            self.out = self.step_fn()
"""

MAIN = """\
import torch
from trainer import Trainer


def main():
    t = Trainer(torch.randn(8, 8, device="cuda"))
{body}
"""


def _cublas(tmp_path: Path, body: str) -> set[tuple[str, int, str]]:
    ws = Workspace([str(tmp_path)])
    ws.add_file(str(tmp_path / "trainer.py"), TRAINER)
    ws.add_file(str(tmp_path / "main.py"), MAIN.format(body=body))
    return {(Path(p).name, f.start_line + 1, f.severity) for p, found in analyse_workspace(ws).items()
            for f in found if f.rule == "lazy-init-cublas"}


def test_a_sibling_warm_up_before_the_capture_call_warms_it(tmp_path: Path) -> None:
    assert _cublas(tmp_path, "    t.warmup()\n    t.capture()") == set()


def test_no_warm_up_in_the_caller_stays_flagged(tmp_path: Path) -> None:
    assert ("trainer.py", 9, "error") in _cublas(tmp_path, "    t.other()\n    t.capture()")


def test_a_warm_up_after_the_capture_call_does_not_count(tmp_path: Path) -> None:
    assert ("trainer.py", 9, "error") in _cublas(tmp_path, "    t.capture()\n    t.warmup()")


def test_one_caller_without_the_warm_up_keeps_the_finding(tmp_path: Path) -> None:
    body = "    t.warmup()\n    t.capture()\n\n\ndef again(t):\n    t.capture()"
    assert ("trainer.py", 9, "error") in _cublas(tmp_path, body)


def test_another_objects_warm_up_does_not_count(tmp_path: Path) -> None:
    body = "    u = Trainer(torch.randn(8, 8, device='cuda'))\n    u.warmup()\n    t.capture()"
    assert ("trainer.py", 9, "error") in _cublas(tmp_path, body)
