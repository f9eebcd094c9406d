"""What one capture touched: the tensors it read that were made before it (its external inputs), the tensors
it made that the program still holds (its outputs), and where each was allocated, read and freed.

A dispatch mode sees every op of the capture; storages are tracked by weak reference, whose callback marks
the graph the moment an input's memory is given back (and says at which user line), so a replay's check of
freed inputs costs one attribute read however many inputs the graph has."""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from denpex.guard.report import describe
from denpex.guard.sites import here

# Device types whose tensors a capture records: CUDA graphs capture CUDA work. The CPU tests add "cpu".
TRACKED_DEVICES: set[str] = {"cuda"}

# Storages made inside any guarded capture live in a graph's private pool: a later graph that reads one is
# reading another graph's output, which stays valid while that graph lives (shared pools, forward/backward).
# By address, with a weak reference to the storage: once it is gone, the address may be any tensor's.
_pool_storages: dict[int, weakref.ref[Any]] = {}


def _in_pool(ptr: int) -> bool:
    ref = _pool_storages.get(ptr)
    if ref is None:
        return False
    if ref() is None:
        del _pool_storages[ptr]
        return False
    return True


@dataclass(eq=False)
class TensorInfo:
    desc: str
    shape: tuple[int, ...]
    dtype: Any
    ptr: int  # the storage's data pointer at capture
    captured_at: str  # the first user line of the capture that read (input) or made (output) it
    tensor: weakref.ref[torch.Tensor]
    storage: weakref.ref[Any] | None = None
    is_param: bool = False
    alloc_at: str | None = None
    freed_at: str | None = None
    version: int = 0  # the tensor's version counter at the last replay (or at capture end)
    tptr: int = 0  # the tensor's own data pointer at capture (cheaper to read again than the storage's)
    counts: list[int] = field(default_factory=list)  # outputs: references held at each replay


@dataclass(eq=False)
class GraphRecord:
    site: str  # the user line that opened the capture
    kind: str  # "graph" (torch.cuda.graph / capture_begin) or "graphed" (make_graphed_callables)
    inputs: list[TensorInfo] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
    freed: list[TensorInfo] = field(default_factory=list)  # filled by storage callbacks
    replays: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # names and Python values (denpex.guard.names)


def leaves(obj: Any) -> Iterator[torch.Tensor]:
    """Tensors in an op's arguments or results (tuples, lists, dicts of them)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            yield from leaves(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from leaves(item)


def storage_ptr(t: torch.Tensor) -> int | None:
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError, TypeError):
        return None  # sparse, nested, meta or fake tensors have no plain storage


class Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call,misc]
    """Sees each op of one capture and sorts the tensors it touches into inputs and made-here."""

    def __init__(self, record: GraphRecord) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.record = record
        self.made: set[int] = set()
        self.inputs: dict[int, TensorInfo] = {}
        self.outputs: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        line: str | None = None
        for t in leaves((args, kwargs)):
            if t.device.type not in TRACKED_DEVICES:
                continue
            ptr = storage_ptr(t)
            if ptr is None or ptr == 0 or ptr in self.made or ptr in self.inputs:
                continue
            if _in_pool(ptr):
                continue
            line = line or here(2)
            self.inputs[ptr] = TensorInfo(
                describe(tuple(t.shape), t.dtype), tuple(t.shape), t.dtype, ptr, line, weakref.ref(t),
                is_param=isinstance(t, torch.nn.Parameter))
        out = func(*args, **kwargs)
        for t in leaves(out):
            if t.device.type not in TRACKED_DEVICES:
                continue
            ptr = storage_ptr(t)
            if ptr is None or ptr == 0 or ptr in self.inputs:
                continue  # an in-place op on an input returns the input
            self.made.add(ptr)
            line = line or here(2)
            self.outputs[id(t)] = (weakref.ref(t), line)
        return out


def finish(recorder: Recorder, on_free: Callable[[GraphRecord, TensorInfo], None]) -> None:
    """Close a capture's record: keep inputs still alive with a storage watch, and outputs still held."""
    rec = recorder.record
    for info in recorder.inputs.values():
        t = info.tensor()
        if t is None:
            continue  # a temporary made and dropped before the capture (a view of an input stays)
        info.version = t._version
        info.tptr = t.data_ptr()
        rec.inputs.append(info)
        watch(rec, info, t, on_free)
    for ref, line in recorder.outputs.values():
        t = ref()
        if t is None:
            continue
        ptr = storage_ptr(t)
        if ptr is None:
            continue
        with contextlib.suppress(TypeError):
            _pool_storages[ptr] = weakref.ref(t.untyped_storage())
        info = TensorInfo(describe(tuple(t.shape), t.dtype), tuple(t.shape), t.dtype, ptr, line, ref)
        rec.outputs.append(info)  # counts start at the first replay: the first steps bind names once
    # views of one output share its storage: keep one per storage, the largest
    by_ptr: dict[int, TensorInfo] = {}
    for info in rec.outputs:
        best = by_ptr.get(info.ptr)
        if best is None or _numel(info.shape) > _numel(best.shape):
            by_ptr[info.ptr] = info
    rec.outputs = list(by_ptr.values())


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def watch(rec: GraphRecord, info: TensorInfo, t: torch.Tensor,
          on_free: Callable[[GraphRecord, TensorInfo], None]) -> None:
    """Call on_free when the input's storage is given back (its last tensor or view gone)."""
    rec_ref = weakref.ref(rec)

    def released(_: object) -> None:
        r = rec_ref()
        if r is None:
            return
        try:
            info.freed_at = here(2)
        except Exception:
            info.freed_at = None
        on_free(r, info)

    try:
        info.storage = weakref.ref(t.untyped_storage(), released)
    except TypeError:
        info.storage = None  # a storage type without weak references: only moves are seen


def held(t: torch.Tensor) -> int:
    """How many references keep this output: Python references to the tensor object (less this call's own)
    plus views and detached copies sharing its storage (make_graphed_callables returns those)."""
    n = sys.getrefcount(t) - 2
    use = getattr(torch._C, "_storage_Use_Count", None)
    if use is not None:
        with contextlib.suppress(RuntimeError, AttributeError, TypeError):
            n += int(use(t.untyped_storage()._cdata)) - 1
    return n
