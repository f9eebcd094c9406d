"""One graph's life under the guard: capture begins (record ops, trace lines), capture ends (sort inputs
and outputs, find their names and allocation lines), each replay (check first, then bookkeeping)."""

from __future__ import annotations

import gc
import sys
from types import FrameType
from typing import Any

from denpex.guard import alloc, checks
from denpex.guard.names import Tracer, bindings_of
from denpex.guard.record import GraphRecord, Recorder, TensorInfo, finish
from denpex.guard.report import Reporter
from denpex.guard.sites import in_library_call, stack_has_file, user_frame, where

ATTR = "_denpex_guard"


class State:
    """The guard's settings and findings for this process."""

    def __init__(self, refuse: bool = True, trace: bool = True) -> None:
        self.refuse = refuse
        self.trace = trace
        self.reporter = Reporter()
        self.graphs = 0
        self.replays = 0


def begin(state: State, graph: Any, frame: FrameType | None) -> None:
    if stack_has_file(frame, "torch/_inductor/"):
        return  # cudagraph trees (torch.compile mode="reduce-overhead") keep their own checks
    kind = "graphed" if in_library_call(frame, "torch/cuda/graphs.py", "make_graphed_callables") else "graph"
    rec = GraphRecord(site=where(user_frame(frame)), kind=kind)
    recorder = Recorder(rec)
    tracer = Tracer() if state.trace else None
    if tracer is not None and not tracer.start(frame):
        tracer = None
    recorder.__enter__()  # type: ignore[no-untyped-call]
    setattr(graph, ATTR, (rec, recorder, tracer))
    state.graphs += 1


def end(state: State, graph: Any, frame: FrameType | None) -> None:
    held = getattr(graph, ATTR, None)
    if not isinstance(held, tuple):
        return
    rec, recorder, tracer = held
    try:
        recorder.__exit__(None, None, None)
    finally:
        if tracer is not None:
            tracer.stop()

    def on_free(r: GraphRecord, info: TensorInfo) -> None:
        r.freed.append(info)

    # torch's dispatch-mode call path leaves reference cycles holding each op's arguments (frames of
    # torch/_compile.py); collect them now, so an input the program deletes is freed at its `del`, as it
    # would be without the guard, and not at some later collection (that also names the wrong line)
    gc.collect(1)
    finish(recorder, on_free)
    alloc.fill(rec.inputs)
    if rec.kind == "graph":
        # names hold static inputs only where the program replays the graph itself
        by_tensor = {id(t): t for info in rec.inputs if (t := info.tensor()) is not None}
        found = bindings_of(by_tensor, user_frame(frame))
        rec.extra["bindings"] = {
            id(info): found[id(t)] for info in rec.inputs
            if (t := info.tensor()) is not None and id(t) in found}
    bound = rec.extra.get("bindings", {})
    rec.extra["bound"] = [info for info in rec.inputs if id(info) in bound]
    rec.extra["polled"] = sorted(rec.inputs, key=lambda info: info.is_param)
    if tracer is not None:
        rec.extra["frozen"] = tracer.frozen()
        rec.extra["side_effects"] = tracer.side_effects()
    setattr(graph, ATTR, rec)


def replay(state: State, graph: Any, frame: FrameType | None) -> GraphRecord | None:
    rec = getattr(graph, ATTR, None)
    if not isinstance(rec, GraphRecord):
        return None
    checks.before_replay(rec, state.reporter, state.refuse, frame)
    return rec


def replayed(state: State, rec: GraphRecord | None) -> None:
    if rec is None:
        return
    state.replays += 1
    checks.after_replay(rec, state.reporter)


def caller(depth: int) -> FrameType:
    return sys._getframe(depth + 1)
