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


def test_a_recapture_from_a_method_of_the_class_follows_the_outside_callers(tmp_path: Path) -> None:
    # realistic r24_clean: `end_epoch` re-captures after an lr change, on an object main warmed before its first
    # capture; an outside caller that captures cold still keeps the error
    again = TRAINER + "\n    def end_epoch(self):\n        self.capture()\n"
    ws = Workspace([str(tmp_path)])
    ws.add_file(str(tmp_path / "trainer.py"), again)
    ws.add_file(str(tmp_path / "main.py"), MAIN.format(body="    t.warmup()\n    t.capture()\n    t.end_epoch()"))
    assert not [f for found in analyse_workspace(ws).values() for f in found if f.rule == "lazy-init-cublas"]
    ws.add_file(str(tmp_path / "main.py"), MAIN.format(body="    t.capture()\n    t.end_epoch()"))
    assert [f for found in analyse_workspace(ws).values() for f in found if f.rule == "lazy-init-cublas"]


OWN_WARMUP = """\
import torch


class Runner:
    def __init__(self, model, x):
        self.model = model
        self.x = x

    def _warmup(self):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.matmul(self.model(self.x), self.x)

    def capture(self):
        {warm}
        self.g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.g):
            self.out = torch.matmul(self.model(self.x), self.x)


def build(x):
    return Runner(torch.relu, x).capture()
"""


def test_a_helper_of_the_class_that_runs_the_captured_callee_warms_it(tmp_path: Path) -> None:
    # realistic r17/r22/r23: capture() calls self._warmup(), whose body runs self.model(...) on a side stream
    def found(warm: str) -> list[str]:
        ws = Workspace([str(tmp_path)])
        ws.add_file(str(tmp_path / "runner.py"), OWN_WARMUP.format(warm=warm))
        return [f.rule for fs in analyse_workspace(ws).values() for f in fs if f.rule == "lazy-init-cublas"]

    assert found("self._warmup()") == []
    assert found("self.x.zero_()") == ["lazy-init-cublas"]


def test_a_capture_two_calls_below_the_entry_is_cold_only_maybe(tmp_path: Path) -> None:
    # realistic r19: main -> capture_step(runner, step) -> runner.record(step); main's eager steps may have run
    # cuBLAS first, out of the rule's sight: a warning, not an error. Called from the entry itself: an error.
    lib = TRAINER + "\n\ndef capture_step(t):\n    t.capture()\n"
    ws = Workspace([str(tmp_path)])
    ws.add_file(str(tmp_path / "trainer.py"), lib)
    ws.add_file(str(tmp_path / "main.py"), MAIN.format(body="    capture_step(t)").replace(
        "from trainer import Trainer", "from trainer import Trainer, capture_step") + "\n\nmain()\n")
    got = {(Path(p).name, f.start_line + 1, f.severity) for p, found in analyse_workspace(ws).items()
           for f in found if f.rule == "lazy-init-cublas"}
    assert got == {("trainer.py", 9, "warning")}
    ws.add_file(str(tmp_path / "main.py"), MAIN.format(body="    t.capture()") + "\n\nmain()\n")
    got = {(Path(p).name, f.start_line + 1, f.severity) for p, found in analyse_workspace(ws).items()
           for f in found if f.rule == "lazy-init-cublas"}
    assert got == {("trainer.py", 9, "error")}
