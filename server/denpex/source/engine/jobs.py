"""Worker processes for a whole-workspace analysis (`denpex scan --jobs N`): the capture files are analysed in
forked children, each with the workspace as the parent held it when they started, and their results come back
in the order the files were given, so the findings are the ones one process gives.

Fork, not spawn: a child starts with the workspace's texts already read, and the function it runs needs no
pickling (a closure is fine). Only where fork is the platform's own way of starting a process (Linux); elsewhere,
and for fewer than two items, everything runs in this process.

A child keeps the trees it parsed for the next items (their call sites and callees are mostly the same files),
until it holds more than `CHILD_RSS_MB`: it then ends after its item and a fresh child takes its place. Syntax
trees take about 22 bytes per byte of source (flashinfer's 36 MB: 785 MB of trees), so a child that kept every
tree it met would hold most of a large tree's."""

from __future__ import annotations

import multiprocessing
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

_I = TypeVar("_I")
_O = TypeVar("_O")

MAX_JOBS = 8  # past this a tree's capture files are too few to share out (and each child holds its own parses)
CHILD_RSS_MB = 400  # a child past this after an item hands its place to a fresh one

# what the children run, and on what: set before they fork, so each holds them in its copy of this module
_TASK: Callable[[Any], Any] | None = None
_ITEMS: Sequence[Any] = ()
_MISSING = object()  # an item no child answered (none could be started): computed in this process


class WorkerError(RuntimeError):
    """An item raised in a child: its traceback, as the child printed it."""


def default_jobs() -> int:
    """The cores this process may run on, at most MAX_JOBS."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_JOBS))


def can_fork() -> bool:
    return sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()


def rss_mb() -> float:
    """This process's resident memory now (Linux), 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def _child(orders: Connection, answers: Connection, budget_mb: float) -> None:
    """Take item indexes until told to stop (None) or past the memory budget; answer each with
    ("ok", index, result, retiring) or ("err", index, traceback)."""
    assert _TASK is not None
    while True:
        i = orders.recv()
        if i is None:
            return
        try:
            out = _TASK(_ITEMS[i])
        except BaseException:  # sent to the parent, which raises it
            answers.send(("err", i, traceback.format_exc()))
            return
        retiring = budget_mb > 0 and rss_mb() > budget_mb
        answers.send(("ok", i, out, retiring))
        if retiring:
            return


def map_in_order(fn: Callable[[_I], _O], items: Sequence[_I], jobs: int,
                 budget_mb: float = CHILD_RSS_MB) -> list[_O]:
    """`[fn(i) for i in items]`, computed by up to `jobs` forked children, one item at a time each (a capture
    file's cost is not known beforehand: the next free child takes the next item). Results must pickle."""
    global _TASK, _ITEMS
    if jobs <= 1 or len(items) < 2 or not can_fork() or _TASK is not None:
        return [fn(i) for i in items]  # (_TASK set: already inside a child, or a run under way)
    _TASK, _ITEMS = fn, items
    ctx = multiprocessing.get_context("fork")
    # a child's answers pipe -> (the child, its orders pipe): plain pipes, one each way (no socket)
    children: dict[Connection, tuple[Any, Connection]] = {}
    results: list[Any] = [_MISSING] * len(items)
    todo = list(range(len(items)))[::-1]  # next item last

    def start() -> Connection | None:
        orders_in, orders_out = ctx.Pipe(duplex=False)
        answers_in, answers_out = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_child, args=(orders_in, answers_out, budget_mb), daemon=True)
        try:
            p.start()
        except OSError:  # no fork here (a sandbox, a process limit): the others, or this process, take the rest
            for c in (orders_in, orders_out, answers_in, answers_out):
                c.close()
            return None
        orders_in.close()
        answers_out.close()
        children[answers_in] = (p, orders_out)
        return answers_in

    def feed(conn: Connection) -> None:
        orders = children[conn][1]
        if todo:
            orders.send(todo.pop())
        else:
            orders.send(None)
            _retire(children, conn)

    try:
        for _ in range(min(jobs, len(items))):
            first = start()
            if first is None:
                break
            feed(first)
        while children:
            for ready in wait(list(children)):
                assert isinstance(ready, Connection)
                conn = ready
                try:
                    msg = conn.recv()
                except EOFError:
                    raise WorkerError("a scan worker process ended without an answer") from None
                if msg[0] == "err":
                    raise WorkerError(f"analysing {items[msg[1]]!r} failed in a worker process:\n{msg[2]}")
                _ok, i, out, retiring = msg
                results[i] = out
                if not retiring:
                    feed(conn)
                    continue
                _retire(children, conn)
                fresh = start() if todo else None
                if fresh is not None:
                    feed(fresh)
        return [r if r is not _MISSING else fn(items[i]) for i, r in enumerate(results)]
    finally:
        for conn in list(children):
            _retire(children, conn, kill=True)
        _TASK, _ITEMS = None, ()


def _retire(children: dict[Connection, tuple[Any, Connection]], conn: Connection, kill: bool = False) -> None:
    p, orders = children.pop(conn)
    conn.close()
    orders.close()
    if kill and p.is_alive():
        p.terminate()
    p.join()
