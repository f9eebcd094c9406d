"""The checks a replay runs before it starts: O(inputs) reads of Python state, no device work, no sync.

- freed input: a storage callback already marked the record (one list read);
- moved input: a live input's storage now starts at another address (`.data =`, `set_`, `resize_`);
- rebound / shape change: a name that held a static input at capture holds another tensor now, and the
  captured tensor was not written since the last replay;
- Python value frozen: a scalar a captured line read has another value now (replay-frozen-branch where it was
  a branch condition, replay-frozen-python-scalar otherwise);
- side effect skipped: a counter the captured code incremented (first replay only);
- output kept: the references held to an output grew at two replays in a row (entries collected in a list)."""

from __future__ import annotations

import gc
import sys
from types import FrameType
from typing import Any

import torch

from denpex.guard.names import MISSING, SCALARS, Binding, Stack, Value, bindings_of
from denpex.guard.record import GraphRecord, TensorInfo, held, storage_ptr
from denpex.guard.report import Finding, Reporter, describe
from denpex.guard.sites import locals_of, user_frames, where


def _alloc(info: TensorInfo) -> str:
    return info.alloc_at or "an unknown line"


def freed_message(rec: GraphRecord, info: TensorInfo, at: str) -> str:
    return (f"CUDA graph replay detected invalidated memory buffer: {info.desc} allocated at {_alloc(info)}, "
            f"captured at {info.captured_at}, freed at {info.freed_at or 'an unknown line'} "
            f"(graph captured at {rec.site}, replayed at {at}); the replay would read memory now given to "
            "other tensors: keep the input alive and refresh it with copy_()")


def moved_message(rec: GraphRecord, info: TensorInfo, at: str) -> str:
    return (f"CUDA graph replay detected invalidated memory buffer: {info.desc} allocated at {_alloc(info)}, "
            f"captured at {info.captured_at}, moved (its storage now lives at another address: .data=, set_() "
            f"or resize_()) (graph captured at {rec.site}, replayed at {at}); the replay would read the old "
            "address: re-capture after moving tensors")


# Freeing is seen at once for every input (storage callbacks); a move in place (resize_, set_) only by
# reading the address. A replay reads at most this many inputs' addresses, in turn, so a big graph costs
# the same per replay as a small one and each of its inputs is read every ceil(n / POLL) replays (the
# first replay reads them all).
POLL = 16


class Replay:
    """Where this replay was called from, worked out only when a check needs it (most replays need none)."""

    def __init__(self, frame: FrameType | None) -> None:
        self._frame = frame
        self._stack: Stack | None = None

    @property
    def stack(self) -> Stack:
        if self._stack is None:
            self._stack = Stack(user_frames(self._frame, 6))
        return self._stack

    @property
    def at(self) -> str:
        return where(self.stack[0] if self.stack else None)


def before_replay(rec: GraphRecord, reporter: Reporter, refuse: bool, frame: FrameType | None) -> None:
    here = Replay(frame)
    if rec.replays == 0 and rec.kind == "graph":
        _learn_names(rec, here)
    bindings: dict[int, list[Binding]] = rec.extra.get("bindings", {})
    for info in rec.freed:
        f = _rebound_and_freed(rec, info, bindings.get(id(info), []), here.stack, here.at) or Finding(
            "replay-freed-input", freed_message(rec, info, here.at))
        _memory(reporter, refuse, f, (id(rec), "freed", info.ptr))
    order: list[TensorInfo] = rec.extra.get("polled", rec.inputs)
    if rec.replays == 0 or len(order) <= POLL:
        turn = order
    else:
        start = (rec.replays * POLL) % len(order)
        turn = order[start:start + POLL] + order[:max(0, start + POLL - len(order))]
    for info in turn:
        t = info.tensor()
        if t is None or info in rec.freed:
            continue
        if t.data_ptr() != info.tptr:
            ptr = storage_ptr(t)
            if ptr is None or ptr == info.ptr:
                continue  # the same storage, another view offset: not a move
            _memory(reporter, refuse, Finding("replay-rebound-static-input", moved_message(rec, info, here.at)),
                    (id(rec), "moved", info.ptr))
    # a rebind leaves the captured tensor unwritten: only those inputs need their names read
    stale = [info for info in rec.extra.get("bound", ()) if _unwritten(info)]
    if stale:
        _rebinds(rec, stale, bindings, here, reporter)
    values: list[Value] = rec.extra.get("frozen", [])
    if values:
        _frozen(rec, values, here, reporter)
    if rec.replays == 0:
        for v in rec.extra.get("side_effects", []):
            reporter.report(Finding("replay-python-side-effects", (
                f"{v.root.label()!r} is counted inside the capture at {v.line} ({v.source}): replays run no "
                f"Python, so it stays at its capture value however often the graph (captured at {rec.site}) "
                "is replayed; count on the host around replay(), or keep the count in a device tensor")),
                (id(rec), "side", v.root.label()))


def _memory(reporter: Reporter, refuse: bool, finding: Finding, key: object) -> None:
    """A replay that would read freed or moved memory: refused (GuardError) or said, as the mode asks."""
    if refuse:
        reporter.refuse(finding, key)
    reporter.report(finding, key)


def _learn_names(rec: GraphRecord, here: Replay) -> None:
    """At the first replay, the names the replaying code holds the static inputs under: a capture helper
    that returned its static tensors left no names the capture could see."""
    bindings: dict[int, list[Binding]] = rec.extra.setdefault("bindings", {})
    by_tensor = {id(t): t for info in rec.inputs if not info.is_param and (t := info.tensor()) is not None}
    if not by_tensor or not here.stack:
        return
    found = bindings_of(by_tensor, here.stack[0])
    bound: list[TensorInfo] = rec.extra.setdefault("bound", [])
    for info in rec.inputs:
        t = info.tensor()
        names = found.get(id(t)) if t is not None else None
        if not names:
            continue
        known = bindings.setdefault(id(info), [])
        known.extend(b for b in names if b not in known)
        if info not in bound:
            bound.append(info)


def _unwritten(info: TensorInfo) -> bool:
    t = info.tensor()
    return t is not None and t._version == info.version


def after_replay(rec: GraphRecord, reporter: Reporter) -> None:
    rec.replays += 1
    for info in rec.extra.get("bound", ()):
        t = info.tensor()
        if t is not None:
            info.version = t._version
    for out in rec.outputs:
        t = out.tensor()
        if t is None:
            continue
        n = held(t)
        out.counts.append(n)
        c = out.counts
        if len(c) > 3:
            del c[0]
        if len(c) == 3 and c[0] < c[1] < c[2]:
            holder = _holder(t)
            reporter.report(Finding("replay-output-kept-without-clone", (
                f"graph output {out.desc} (made at {out.captured_at}, graph captured at {rec.site}) is kept "
                f"across replays: {c[2] - c[0]} more references to it after replay {rec.replays} than two "
                "replays earlier, more at each"
                f"{holder}; every kept entry aliases one buffer that each replay overwrites: keep out.clone()")),
                (id(rec), "kept", out.ptr))
            del t


def _rebound_and_freed(rec: GraphRecord, info: TensorInfo, names: list[Binding], stack: list[FrameType],
                       at: str) -> Finding | None:
    """A freed input whose name now holds another tensor was rebound (`static_x = batch`), which freed it."""
    for b in names:
        now = b.read(stack)
        if not isinstance(now, torch.Tensor):
            continue
        label = b.label()
        shape = describe(tuple(now.shape), now.dtype)
        rule = "replay-shape-change" if shape != info.desc else "replay-rebound-static-input"
        return Finding(rule, (
            f"static input {label!r} ({info.desc}, captured at {info.captured_at}) was rebound to another "
            f"tensor ({shape}) at {info.freed_at or 'an unknown line'}, which freed the captured one: "
            f"{freed_message(rec, info, at)}; refresh it in place with {label}.copy_(new) instead"))
    return None


def _rebinds(rec: GraphRecord, stale: list[TensorInfo], bindings: dict[int, list[Binding]], here: Replay,
             reporter: Reporter) -> None:
    for info in stale:
        t = info.tensor()
        if t is None:
            continue
        for b in bindings.get(id(info), ()):
            now = b.read(here.stack)
            if now is MISSING or now is t or not isinstance(now, torch.Tensor):
                continue
            if storage_ptr(now) == info.ptr:
                continue  # a view of the captured tensor (static.view(...)): the graph reads that memory
            label = b.label()
            if tuple(now.shape) != info.shape or now.dtype != info.dtype:
                reporter.report(Finding("replay-shape-change", (
                    f"static input {label!r} was captured as {info.desc} at {info.captured_at} and is now "
                    f"{describe(tuple(now.shape), now.dtype)} at this replay ({here.at}): the graph still "
                    f"reads the {info.desc} tensor; capture one graph per shape, or copy into a slice of the "
                    "static input and pad")), (id(rec), "shape", label))
            else:
                reporter.report(Finding("replay-rebound-static-input", (
                    f"static input {label!r} ({info.desc}, captured at {info.captured_at}) was rebound to "
                    f"another tensor and never refreshed before this replay at {here.at}: the graph still "
                    f"reads the old tensor; refresh it with {label}.copy_(new)")), (id(rec), "rebound", label))


def _frozen(rec: GraphRecord, values: list[Value], here: Replay, reporter: Reporter) -> None:
    for v in values:
        now = v.root.read(here.stack) if v.root.kind == "local" else v.root.read([])
        if now is MISSING or not isinstance(now, SCALARS):
            continue
        if type(now) is type(v.value) and now == v.value:
            continue
        label = v.root.label()
        if v.condition:  # the rule book's replay-frozen-branch: the value decided which kernels were recorded
            rule = "replay-frozen-branch"
            text = (f"branch condition {label!r} at {v.line} ({v.source}) was {v.value!r} when the graph was "
                    f"captured at {rec.site} and is {now!r} at this replay ({here.at}): the graph keeps the "
                    "branch taken at capture")
        else:
            rule = "replay-frozen-python-scalar"
            text = (f"{label!r} was {v.value!r} when the graph was captured at {rec.site} (read at {v.line}: "
                    f"{v.source}) and is {now!r} at this replay ({here.at}): the graph keeps using {v.value!r}")
        reporter.report(Finding(rule, text + (
            "; pass it as a device tensor the graph reads (fill_() it before replay), or capture one graph "
            "per value")), (id(rec), "frozen", label, v.line))


def _holder(t: Any) -> str:
    """' (held by list 'outs')' where a container keeps the output and a name of the caller holds it."""
    try:
        containers = [r for r in gc.get_referrers(t) if isinstance(r, (list, set, tuple, dict))]
    except Exception:
        return ""
    frame = sys._getframe(2)
    for f in user_frames(frame, 4):
        scopes = (locals_of(f), f.f_globals)
        for scope in scopes:
            for name, value in list(scope.items()):
                if any(value is c for c in containers) and isinstance(value, (list, set, dict)):
                    return f" (held by {type(value).__name__} {name!r})"
    return ""
