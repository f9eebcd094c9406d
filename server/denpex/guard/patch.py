"""Hooks on torch's graph API: CUDAGraph.capture_begin / capture_end / replay (what torch.cuda.graph,
make_graphed_callables and hand-written captures all call) and make_graphed_callables (compare mode).
Each wrapper calls the original; the originals stay on the class for `remove()`."""

from __future__ import annotations

import functools
from typing import Any

from denpex.guard import lifecycle
from denpex.guard.lifecycle import State

_ORIGINALS = "_denpex_guard_originals"


def install(graph_cls: type, state: State) -> None:
    if _ORIGINALS in graph_cls.__dict__:
        return
    begin0 = graph_cls.capture_begin  # type: ignore[attr-defined]
    end0 = graph_cls.capture_end  # type: ignore[attr-defined]
    replay0 = graph_cls.replay  # type: ignore[attr-defined]

    @functools.wraps(begin0)
    def capture_begin(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = begin0(self, *args, **kwargs)
        try:
            lifecycle.begin(state, self, lifecycle.caller(1))
        except Exception as exc:
            _broken(exc)
        return out

    @functools.wraps(end0)
    def capture_end(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return end0(self, *args, **kwargs)
        finally:
            try:
                lifecycle.end(state, self, lifecycle.caller(1))
            except Exception as exc:
                _broken(exc)

    @functools.wraps(replay0)
    def replay(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec = lifecycle.replay(state, self, lifecycle.caller(1))  # GuardError refuses the replay
        out = replay0(self, *args, **kwargs)
        try:
            lifecycle.replayed(state, rec)
        except Exception as exc:
            _broken(exc)
        return out

    setattr(graph_cls, _ORIGINALS, (begin0, end0, replay0))
    graph_cls.capture_begin = capture_begin  # type: ignore[attr-defined]
    graph_cls.capture_end = capture_end  # type: ignore[attr-defined]
    graph_cls.replay = replay  # type: ignore[attr-defined]


def remove(graph_cls: type) -> None:
    originals = graph_cls.__dict__.get(_ORIGINALS)
    if originals is None:
        return
    graph_cls.capture_begin, graph_cls.capture_end, graph_cls.replay = originals  # type: ignore[attr-defined]
    delattr(graph_cls, _ORIGINALS)


def _broken(exc: BaseException) -> None:
    from denpex.guard.report import say

    say(f"internal error, this graph is not checked: {type(exc).__name__}: {exc}")
