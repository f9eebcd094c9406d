"""The user line that allocated each captured input, from the CUDA caching allocator's own record.

With the guard on, the allocator keeps the Python stack of every live block (`_record_memory_history` in
"state" mode: no event ring, one stack per live allocation). A capture's end looks its inputs up once in a
snapshot. Turned on when CUDA initialises (torch.cuda._lazy_call), so the guard itself never initialises
CUDA; DENPEX_GUARD_ALLOC=0 leaves it off (inputs are then "allocated at an unknown line")."""

from __future__ import annotations

import os
from typing import Any

import torch

from denpex.guard.record import TensorInfo
from denpex.guard.sites import is_user_file

_on = False


def start() -> None:
    if os.environ.get("DENPEX_GUARD_ALLOC", "1") == "0":
        return

    def begin() -> None:
        global _on
        try:
            torch.cuda.memory._record_memory_history(enabled="state", context="alloc", stacks="python")
            _on = True
        except (TypeError, RuntimeError, AttributeError):
            try:  # older releases: no "state" mode, keep the smallest ring
                torch.cuda.memory._record_memory_history(True, max_entries=1)  # type: ignore[call-arg,arg-type]
                _on = True
            except (TypeError, RuntimeError, AttributeError):
                _on = False

    lazy = getattr(torch.cuda, "_lazy_call", None)
    if lazy is not None:
        lazy(begin)


def fill(inputs: list[TensorInfo]) -> None:
    """Set alloc_at of each input whose storage starts a block the allocator has a stack for."""
    if not _on or not inputs:
        return
    wanted = {info.ptr: info for info in inputs if info.alloc_at is None}
    try:
        snap: dict[str, Any] = torch.cuda.memory._snapshot()
    except (RuntimeError, AttributeError):
        return
    for seg in snap.get("segments", []):
        for block in seg.get("blocks", []):
            info = wanted.get(block.get("address", -1))
            if info is None:
                continue
            for frame in block.get("frames", []):
                name = frame.get("filename", "")
                if is_user_file(name):
                    info.alloc_at = f"{name}:{frame.get('line')}"
                    break
