"""The first-error pass over a big file in ranges, on every core, with the answer of one pass.

One pass (first_error.scan) reads the file in chunks and keeps, for the lines before a candidate, the
previous chunk and the current one. Here the file is cut where that pass's chunks start (found from
the last newline of each chunk-sized window, reading a few KiB per chunk), and each range is read by
its own process with its window primed with exactly the chunk before it, so every line sees the bytes
it would see in one pass; line numbers are the range's own and are shifted afterwards.

Each range starts as one pass starts: nothing open, nothing waiting. That is the state one pass is in at
the range's start whenever the ranges before it ended with nothing open (no traceback without its last
line, no error record waiting for its event); the ranges are then joined in file order: the first range
with a settled answer gives it, with the collateral reports of the ranges before it. Where a range
ended with something open, its successors' answers do not hold, and the file is read again in one pass.
The processes of later ranges are stopped as soon as an earlier range has the answer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from denpex.logs import scanner
from denpex.logs.attribution import Attribution
from denpex.logs.bounded import Bounded
from denpex.logs.first_error import (
    MAX_BLOCK,
    MAX_COLLATERAL,
    Candidate,
    FirstError,
    _Collector,
    _WithEnd,
    drive,
    scan,
)
from denpex.logs.matcher import Matcher
from denpex.logs.scanner import Window
from denpex.logs.traceback import Frame, frames_before

MIN_PART = 48 << 20  # smaller ranges cost more in starting a process than they save


@dataclass
class Part:
    """What the pass left after one range, started with nothing open or waiting."""

    lines: int  # newlines in the range (all of them unless the answer was settled in it)
    done: bool  # the answer is settled in this range
    found: Candidate | None = None
    reported_by: Candidate | None = None
    collateral: list[Candidate] = field(default_factory=list)
    first_line: int | None = None  # the range's first line with a key (no chunk is skipped before it)
    opened: list[int] = field(default_factory=list)  # tracebacks still open at its end: their first lines
    pending: Candidate | None = None  # a record still waiting for its event at its end
    pending_span: int = 0


class Handle(Protocol):
    def result(self) -> Part: ...


def chunk_starts(path: str) -> list[int] | None:
    """Where one pass's chunks start: each read of scanner.CHUNK bytes is kept up to its last newline and
    the next read starts after it. None where a chunk-sized window holds no newline (one pass carries
    such a line over instead of reading it again: not reproduced here)."""
    chunk = scanner.CHUNK
    size = os.path.getsize(path)
    starts = [0]
    with open(path, "rb") as fh:
        b = 0
        while b + chunk < size:  # a full read with more after it
            look = min(chunk, 4096)
            nl = -1
            while nl < 0:
                fh.seek(b + chunk - look)
                nl = fh.read(look).rfind(b"\n")
                if nl >= 0:
                    b = b + chunk - look + nl + 1
                elif look == chunk:
                    return None
                else:
                    look = min(chunk, look * 16)
            starts.append(b)
    return starts


def plan(path: str, parts: int) -> list[tuple[int, int, int, bool]]:
    """(start of the chunk before, start, end, last) of about equal ranges at one pass's chunk starts."""
    size = os.path.getsize(path)
    parts = max(1, min(parts, size // MIN_PART))
    starts = chunk_starts(path) if parts > 1 else None
    if starts is None or parts == 1:
        return [(0, 0, size, True)]
    cuts = [0]
    k = 0
    for r in range(1, parts):
        target = size * r // parts
        while k < len(starts) and starts[k] < target:
            k += 1
        if k < len(starts) and starts[k] > cuts[-1]:
            cuts.append(starts[k])
    out = []
    for i, a in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else size
        prev = starts[starts.index(a) - 1] if a > 0 else 0
        out.append((prev, a, end, i + 1 == len(cuts)))
    return out


def scan_part(path: str, prev: int, start: int, end: int, last: bool, matcher: Matcher,
              base: Attribution | None, context: int) -> Part:
    """The pass over bytes [start, end) of a file, its window primed with bytes [prev, start)."""

    c = _Collector(matcher, base, context)
    c.skip_from_first = start > 0  # one pass may reach this range with something open: see join()
    with open(path, "rb") as fh:
        window = None
        if start > 0:
            fh.seek(prev)
            window = Window()
            window.prime(fh.read(start - prev))
        stream: Any = Bounded(fh, start, end)
        stats = drive(_WithEnd(stream) if last else stream, c, window)
    if last:
        c._settle(None)  # the end of the log: a record still waiting is the answer (as _Collector.result)
    return Part(stats.lines, c.done, c.found, c.reported_by, c.collateral, c.first_line,
                sorted(opened for opened, _who in c.open.values()), c.pending, c.pending_span)


def _shifted(c: Candidate | None, by: int) -> Candidate | None:
    if c is None or by == 0:
        return c
    return replace(c, line=c.line + by, context=[(n + by, t) for n, t in c.context])


def join(parts: list[Callable[[], Part]]) -> tuple[bool, FirstError | None, int]:
    """(whole, answer, ranges read) from the ranges' results in file order. whole is False where one pass
    would reach a range with something open that its first line does not settle (its answer then
    depends on what the pass carried into it): a traceback opened less than MAX_BLOCK lines before that
    line (one pass would look for its last line there), or a record waiting for its event within its
    span. Otherwise that first line ends the traceback unread, or settles the waiting record as the
    answer, and the range goes on as it started, with nothing open."""
    shift = 0
    collateral: list[Candidate] = []
    opened: list[int] = []  # what one pass carries into the next range, in the file's line numbers
    pending: Candidate | None = None
    span = 0
    for i, get in enumerate(parts):
        p = get()
        if opened or pending is not None:
            if p.first_line is None:  # no line with a key: one pass carries the same into the next range
                shift += p.lines
                continue
            first = p.first_line + shift
            if any(first - o <= MAX_BLOCK for o in opened):
                return False, None, i + 1
            if pending is not None:
                if first - pending.line <= span:
                    return False, None, i + 1
                return True, FirstError(pending, collateral, _frames(pending), None), i + 1
            opened = []
        collateral += [c for c in (_shifted(x, shift) for x in p.collateral) if c is not None]
        del collateral[MAX_COLLATERAL:]
        if p.done:
            f, by = _shifted(p.found, shift), _shifted(p.reported_by, shift)
            assert f is not None
            return True, FirstError(f, collateral, _frames(f), by), i + 1
        opened = [o + shift for o in p.opened]
        pending, span = _shifted(p.pending, shift), p.pending_span
        shift += p.lines
    return True, (FirstError(None, collateral) if collateral else None), len(parts)


def _frames(f: Candidate) -> list[Frame]:
    return frames_before([*f.context, (f.line, f.text)], f.who.rank, f.who.local_rank) if f.context else []


def scan_ranges(path: str, matcher: Matcher, base: Attribution | None, context: int, parts: int,
                call: Callable[[int, int, int, bool], Handle]) -> FirstError | None:
    """first_error.scan of a file, its ranges after the first read by call(prev, start, end, last) (in
    other processes), the first here."""
    ranges = plan(path, parts)
    if len(ranges) == 1:
        with open(path, "rb") as fh:
            return scan(fh, matcher, base, context)
    handles = [call(*r) for r in ranges[1:]]
    first = scan_part(path, *ranges[0], matcher, base, context)
    read = 0
    try:
        whole, answer, read = join([lambda: first, *(h.result for h in handles)])
    finally:
        for h in handles[max(0, read - 1):]:
            cancel = getattr(h, "cancel", None)
            if cancel is not None:
                cancel()
    if whole:
        return answer
    with open(path, "rb") as fh:
        return scan(fh, matcher, base, context)
