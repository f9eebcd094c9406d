"""Runtime guard for CUDA graphs: replays that would read freed, moved or stale memory, or Python state the
capture froze, are named at the line before they run.

Turn it on with `denpex run --guard -- python train.py`, `import denpex.guard; denpex.guard.enable()`, or
`pytest -p denpex.guard`. Modes (DENPEX_GUARD or enable(mode=...), comma-separated):
  refuse (default)  a replay whose input was freed or moved raises GuardError instead of running
  warn              say it and replay anyway
  compare[:N]       also run each make_graphed_callables callable eagerly on copies of its first N inputs
                    (default 3) and report the first output that differs
Every finding is one stderr line `denpex-guard: <rule> (<code>): ...`, which `denpex diagnose` names.

This package imports only the standard library and torch (and torch only once enable() runs), so that
`denpex run --guard` can load it into any interpreter that has torch."""

from __future__ import annotations

import atexit
import os
from dataclasses import dataclass
from typing import Any

from denpex.guard.report import GuardError, Reporter, say

__all__ = ["GuardError", "Options", "disable", "enable", "findings", "parse_mode"]


@dataclass(frozen=True)
class Options:
    refuse: bool = True
    compare: int = 0  # how many calls of each graphed callable to compare against eager
    trace: bool = True  # trace captured lines for the Python values they read


def parse_mode(text: str) -> Options:
    """'refuse', 'warn', 'compare', 'compare:5', 'warn,compare:2', 'on', 'notrace' -> Options. Raises
    ValueError with a one-line reason."""
    refuse, compare, trace = True, 0, True
    for word in (w.strip() for w in text.split(",")):
        if word in ("", "on", "1", "true", "refuse"):
            refuse = True if word == "refuse" else refuse
        elif word == "warn":
            refuse = False
        elif word == "notrace":
            trace = False
        elif word == "compare" or word.startswith("compare:"):
            n = word.partition(":")[2] or "3"
            if not n.isdigit() or int(n) < 1:
                raise ValueError(f"compare:{n}: the number of compared calls must be a positive integer")
            compare = int(n)
        else:
            raise ValueError(f"unknown guard mode {word!r} (use refuse, warn, compare[:N], notrace)")
    return Options(refuse, compare, trace)


_state: Any = None


def enable(mode: str | Options | None = None, *, quiet_without_cuda: bool = False) -> bool:
    """Install the guard in this process. Returns False (after one line saying why) where there is no
    torch or no CUDA; True when it is on. Calling it again changes the mode."""
    global _state
    opts = mode if isinstance(mode, Options) else parse_mode(mode or os.environ.get("DENPEX_GUARD", ""))
    try:
        import torch
    except ImportError:
        say("off: PyTorch is not installed in this interpreter; nothing is checked")
        return False
    if not quiet_without_cuda and not torch.cuda.is_available():
        say(f"off: CUDA is not available (torch {torch.__version__}); nothing is checked")
        return False
    return _install(torch, opts)


def _install(torch: Any, opts: Options) -> bool:
    global _state
    from denpex.guard import alloc, compare, patch, sites
    from denpex.guard.lifecycle import State

    sites.skip_package(torch.__file__)
    if _state is None:
        _state = State(refuse=opts.refuse, trace=opts.trace)
        patch.install(torch.cuda.CUDAGraph, _state)
        alloc.start()
        atexit.register(_summary)
    _state.refuse, _state.trace = opts.refuse, opts.trace
    compare.install(torch, _state, opts.compare)
    return True


def disable() -> None:
    """Take the hooks off again (graphs captured meanwhile keep their records but are no longer checked)."""
    global _state
    if _state is None:
        return
    import torch

    from denpex.guard import compare, patch

    patch.remove(torch.cuda.CUDAGraph)
    compare.install(torch, _state, 0)
    _state = None


def findings() -> list[Any]:
    """What the guard reported in this process so far (denpex.guard.report.Finding)."""
    return [] if _state is None else list(_state.reporter.findings)


def reporter() -> Reporter | None:
    return None if _state is None else _state.reporter


def _summary() -> None:
    s = _state
    if s is None:
        return
    if s.graphs == 0:
        # turned on by `denpex run --guard` without asking CUDA at import (that would initialise it early):
        # the job's own process says at exit when there was no CUDA to check
        if os.environ.get("DENPEX_GUARD_MAIN") == str(os.getppid()):
            import torch

            if not torch.cuda.is_available():
                say(f"off: CUDA is not available (torch {torch.__version__}); nothing was checked")
        return
    n = len(s.reporter.findings)
    say(f"checked {s.graphs} graph(s) over {s.replays} replay(s): "
        + (f"{n} finding(s) above" if n else "no finding"))


# `pytest -p denpex.guard`: the guard is on for the whole session; a test during which it reports
# something fails with the guard's lines.
def pytest_configure(config: Any) -> None:
    enable(quiet_without_cuda=False)


def pytest_runtest_call(item: Any) -> Any:
    before = len(findings())
    result = yield
    new = findings()[before:]
    if new:
        import pytest

        pytest.fail("denpex guard:\n" + "\n".join(f.line() for f in new), pytrace=False)
    return result


# what pluggy's HookimplMarker(wrapper=True) sets, without importing pytest into every guarded program
pytest_runtest_call.pytest_impl = {  # type: ignore[attr-defined]
    "wrapper": True, "hookwrapper": False, "optionalhook": False, "tryfirst": False, "trylast": False,
    "specname": None,
}
