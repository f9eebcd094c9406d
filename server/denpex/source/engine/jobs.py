"""Worker processes for a whole-workspace analysis (`denpex scan --jobs N`): the capture files are analysed in
forked children, each with the workspace as the parent held it when they started, and their results come back
in the order the files were given, so the findings are the ones one process gives.

Fork, not spawn: a child starts with the workspace's texts already read, and the function it runs needs no
pickling (a closure is fine). Only where fork is the platform's own way of starting a process (Linux); elsewhere,
and for fewer than two items, everything runs in this process."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

_I = TypeVar("_I")
_O = TypeVar("_O")

MAX_JOBS = 8  # past this a tree's capture files are too few to share out (and each child holds its own parses)

# the function the children run: set before the pool forks, so each child holds it in its copy of this module
_TASK: Callable[[Any], Any] | None = None


def default_jobs() -> int:
    """The cores this process may run on, at most MAX_JOBS."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_JOBS))


def can_fork() -> bool:
    return sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()


def _run(item: Any) -> Any:
    assert _TASK is not None
    return _TASK(item)


def map_in_order(fn: Callable[[_I], _O], items: Sequence[_I], jobs: int) -> list[_O]:
    """`[fn(i) for i in items]`, computed by up to `jobs` forked children, one item at a time each (a capture
    file's cost is not known beforehand: the next free child takes the next item). Results must pickle."""
    global _TASK
    if jobs <= 1 or len(items) < 2 or not can_fork() or _TASK is not None:
        return [fn(i) for i in items]  # (_TASK set: already inside a child, or a pool under way)
    _TASK = fn
    try:
        try:
            pool = multiprocessing.get_context("fork").Pool(min(jobs, len(items)))
        except OSError:  # no fork here (a sandbox, a process limit): the same work in this process
            return [fn(i) for i in items]
        with pool:
            return list(pool.imap(_run, items, chunksize=1))
    finally:
        _TASK = None
