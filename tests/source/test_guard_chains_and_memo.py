"""Two ways code under a capture does not run there (issue 19, ecosystem review): a capture guard in an `and`
with tests that hold whenever a capture runs (TransformerEngine's `torch.cuda.is_available() and
torch.cuda.is_current_stream_capturing()` before a host copy), and an `@lru_cache` function the warm-up before the
capture already called (lightllm's kernel configs)."""

from __future__ import annotations

from tests.source.helpers import capture_program, workspace_flags

GUARDED = '''import torch


def offsets(t, flag):
    if {cond}:
        raise ValueError("not graph-safe")
    return t.tolist()
'''


def _guarded(cond: str) -> set[tuple[str, int, str]]:
    main = capture_program("from lib import offsets", "y = offsets(x, True)")
    return {f for f in workspace_flags({"lib.py": GUARDED.format(cond=cond), "main.py": main}) if f[0] == "lib.py"}


def test_a_guard_anded_with_tests_true_under_capture_is_the_guard() -> None:
    assert _guarded("torch.cuda.is_current_stream_capturing()") == set()
    assert _guarded("torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()") == set()
    assert _guarded("torch.cuda.is_available() and torch.cuda.is_initialized() and "
                    "torch.cuda.is_current_stream_capturing()") == set()


def test_a_guard_anded_with_anything_else_still_leaves_the_line() -> None:
    assert ("lib.py", 7, "capture-host-copy") in _guarded("flag and torch.cuda.is_current_stream_capturing()")
    assert ("lib.py", 7, "capture-host-copy") in _guarded("torch.cuda.is_available() or "
                                                           "torch.cuda.is_current_stream_capturing()")


CONFIGS = '''import logging
from functools import lru_cache

import torch

logger = logging.getLogger(__name__)


@lru_cache(maxsize=None)
def best_config(n):
    logger.warning("no tuned config for %d", n)
    return {"block": 64}


def kernel(x):
    cfg = best_config(x.shape[0])
    return x * cfg["block"]
'''


def _memo(warm: bool) -> set[tuple[str, int, str]]:
    main = ("import torch\nfrom configs import kernel\n\nx = torch.ones(4, device='cuda')\n"
            + ("y = kernel(x)\n" if warm else "") +
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    y = kernel(x)\n")
    return {f for f in workspace_flags({"configs.py": CONFIGS, "main.py": main}) if f[0] == "configs.py"}


def test_a_memoised_function_the_warm_up_ran_is_not_walked() -> None:
    assert ("configs.py", 11, "replay-python-side-effects") in _memo(warm=False)
    assert _memo(warm=True) == set()


SINGLETON = '''import logging
import threading

logger = logging.getLogger(__name__)


class Tuner:
    _instance = None
    _lock = threading.Lock()

    def __init__(self):
        logger.warning("loading tuning tables")

    @classmethod
    def get(cls):
        if cls._instance is None:
            with cls._lock:
                if cls._instance is None:
                    cls._instance = Tuner()
        return cls._instance


def run(x):
    tuner = Tuner.get()
    return x * 2
'''


def test_a_class_level_singleton_built_in_the_warm_up_is_not_built_again() -> None:
    """`if cls._instance is None: cls._instance = Tuner()` (flashinfer's AutoTuner.get): the warm-up built it."""
    def flags(warm: bool) -> set[tuple[str, int, str]]:
        main = ("import torch\nfrom tuner import run\n\nx = torch.ones(4, device='cuda')\n"
                + ("y = run(x)\n" if warm else "") +
                "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    y = run(x)\n")
        return {f for f in workspace_flags({"tuner.py": SINGLETON, "main.py": main}) if f[0] == "tuner.py"}
    assert ("tuner.py", 12, "replay-python-side-effects") in flags(warm=False)
    assert flags(warm=True) == set()
