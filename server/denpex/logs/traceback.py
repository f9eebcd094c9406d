"""Python frames of the exception that a signature line belongs to."""

from __future__ import annotations

import re
from dataclasses import dataclass

from denpex.logs import ipython
from denpex.logs.attribution import attribute, strip_prefixes

_FRAME = re.compile(r'^\s*File "(?P<path>[^"\n]{1,1000})", line (?P<line>\d{1,9}), in (?P<func>\S{1,300})')
_LIB = re.compile(
    r"(?:^<frozen |/site-packages/|/dist-packages/|/lib/python\d(?:\.\d+)?/(?!site-packages)|^<string>|^<stdin>)"
)


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str
    code: str
    log_line: int  # where the frame header sits in the log

    @property
    def is_library(self) -> bool:
        return bool(_LIB.search(self.path))

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "function": self.function, "code": self.code,
                "log_line": self.log_line, "library": self.is_library}


def frames_before(
    lines: list[tuple[int, str]], hit_rank: int | None, hit_local: int | None
) -> list[Frame]:
    """Frames of the traceback that ends just before the last of `lines`.

    Lines from other ranks (interleaved writers) are skipped; the walk stops at the
    traceback header or at a chained-exception separator.
    """
    # Walked from the end and stopped at the header: the lines above it (most of a 200-line
    # context) are never looked at. Plain lines (neither header, frame nor arrow) are attributed
    # only when a frame above takes one as its code line: they were most of the walk's cost.
    frames: list[Frame] = []
    next_code = ""  # the code line right below the current one (of the same writer), if any
    pending: list[str] = []  # plain lines since the last line that set next_code, nearest last
    arrow: ipython.Arrow | None = None  # IPython frames: the `---->` line below the frame's header
    filtered = hit_rank is not None or hit_local is not None  # else no line is anyone else's

    def mine(raw: str) -> bool:
        who = attribute(raw)
        if hit_rank is not None and who.rank is not None and who.rank != hit_rank:
            return False
        return not (hit_local is not None and who.local_rank is not None and who.local_rank != hit_local)

    def code_below() -> str:
        for raw in reversed(pending):  # the nearest of this writer's plain lines is the code line
            if not filtered or mine(raw):
                stripped = strip_prefixes(raw).strip()
                return stripped if stripped and not set(stripped) <= {"^", "~", " "} else ""
        return next_code

    for no, raw in reversed(lines):
        text = strip_prefixes(raw)
        if text.startswith("Traceback (most recent call last)") or text.startswith("During handling") or text.startswith("The above exception") or ipython.is_header(text):
            if filtered and not mine(raw):
                continue
            break
        m = _FRAME.match(text)
        ip = None if m else ipython.frame(text, arrow)
        a = None if m or ip is not None else ipython.arrow(text)
        if m is None and ip is None and a is None:
            pending.append(raw)
            continue
        if filtered and not mine(raw):
            continue
        if m:
            frames.append(Frame(m["path"], int(m["line"]), m["func"], code_below(), no))
        elif ip is not None:
            frames.append(Frame(ip.path, ip.line, ip.function, ip.code, no))
            arrow = None
        else:
            arrow = a
        next_code = ""
        pending.clear()
    frames.reverse()
    return frames


def innermost_user_frame(frames: list[Frame]) -> Frame | None:
    for frame in reversed(frames):
        if not frame.is_library:
            return frame
    return None
