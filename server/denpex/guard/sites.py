"""Where in the user's program something happened: the innermost frame outside torch, Denpex and the
standard library, written as `file:line`."""

from __future__ import annotations

import os
import sys
import sysconfig
from types import FrameType

_GUARD_DIR = os.path.dirname(os.path.abspath(__file__))
# the stdlib (contextlib, threading, runpy, ...) never holds the user's line
_STDLIB = tuple(
    os.path.normcase(os.path.abspath(p)) + os.sep
    for p in {sysconfig.get_paths().get("stdlib", ""), sysconfig.get_paths().get("platstdlib", "")}
    if p
)
_skip: tuple[str, ...] = (_GUARD_DIR + os.sep,)


def skip_package(module_file: str) -> None:
    """Treat the package holding `module_file` (torch's __init__.py) as library code, not the user's."""
    global _skip
    folder = os.path.dirname(os.path.abspath(module_file)) + os.sep
    if folder not in _skip:
        _skip = (*_skip, folder)
        _user_file.clear()


_user_file: dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    known = _user_file.get(filename)
    if known is not None:
        return known
    if not filename or filename.startswith("<"):
        answer = False
    else:
        path = os.path.normcase(os.path.abspath(filename))
        answer = not path.startswith(_skip + _STDLIB)
    _user_file[filename] = answer
    return answer


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above `frame` that runs the user's code."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_frames(frame: FrameType | None, limit: int) -> list[FrameType]:
    """Up to `limit` user frames from `frame` outwards."""
    out: list[FrameType] = []
    while frame is not None and len(out) < limit:
        if is_user_file(frame.f_code.co_filename):
            out.append(frame)
        frame = frame.f_back
    return out


# Before 3.13 (PEP 667) a function frame's f_locals is a dict snapshot cached on the frame: it keeps every
# local's value alive after the program deletes or rebinds it, until the next snapshot. The guard must not
# keep the user's tensors (or graphs, whose destruction during a later capture invalidates it) alive, so it
# empties each snapshot it made once it has read it.
_SNAPSHOTS = sys.version_info < (3, 13)


_CO_OPTIMIZED = 0x0001  # inspect.CO_OPTIMIZED: a function's fast locals; other frames' f_locals is the
# namespace itself (a module's globals, a class body's namespace, exec's dict) and is never a snapshot


def _snapshot_only(frame: FrameType, snap: object) -> bool:
    """Whether `snap` is the interpreter's cached snapshot of a function's locals that nobody else holds
    (a program that kept `locals()` holds this very dict: it is left alone). Four references: the frame's,
    the caller's variable, this function's parameter and getrefcount's own argument."""
    return (_SNAPSHOTS and bool(frame.f_code.co_flags & _CO_OPTIMIZED) and isinstance(snap, dict)
            and sys.getrefcount(snap) <= 4)


def locals_of(frame: FrameType, *, in_trace: bool = False) -> dict[str, object]:
    """A frame's locals (a module's globals at module level), read without leaving a snapshot behind.
    Inside a trace function the snapshot is the interpreter's own (it writes it back after the call), so
    it is left alone there; `drop_snapshot` empties it once tracing stops."""
    if not frame.f_code.co_flags & _CO_OPTIMIZED:
        names = frame.f_locals
        return names if isinstance(names, dict) else dict(names)
    snap = frame.f_locals
    if in_trace or not _snapshot_only(frame, snap):
        return snap if isinstance(snap, dict) else dict(snap)
    out = dict(snap)
    snap.clear()
    return out


def drop_snapshot(frame: FrameType) -> None:
    """Empty the locals snapshot a trace left on a function frame that is still running."""
    snap = frame.f_locals
    if _snapshot_only(frame, snap):
        snap.clear()


def where(frame: FrameType | None) -> str:
    if frame is None:
        return "an unknown line"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def here(depth: int = 1) -> str:
    """`file:line` of the innermost user frame of the caller's stack."""
    return where(user_frame(sys._getframe(depth)))


def in_library_call(frame: FrameType | None, library_file_part: str, function: str) -> bool:
    """Whether the stack holds `function` from a file whose path contains `library_file_part`."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == function and library_file_part in code.co_filename.replace(os.sep, "/"):
            return True
        frame = frame.f_back
    return False


def stack_has_file(frame: FrameType | None, file_part: str) -> bool:
    while frame is not None:
        if file_part in frame.f_code.co_filename.replace(os.sep, "/"):
            return True
        frame = frame.f_back
    return False
