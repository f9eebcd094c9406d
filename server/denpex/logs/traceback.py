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
    # context) are never attributed, which was most of a small rank file's whole diagnosis.
    frames: list[Frame] = []
    next_code = ""  # the code line right below the current one (of the same writer), if any
    arrow: ipython.Arrow | None = None  # IPython frames: the `---->` line below the frame's header
    filtered = hit_rank is not None or hit_local is not None  # else no line is anyone else's
    for no, raw in reversed(lines):
        if filtered:
            who = attribute(raw)
            if hit_rank is not None and who.rank is not None and who.rank != hit_rank:
                continue
            if hit_local is not None and who.local_rank is not None and who.local_rank != hit_local:
                continue
        text = strip_prefixes(raw)
        if text.startswith("Traceback (most recent call last)") or text.startswith("During handling") or text.startswith("The above exception") or ipython.is_header(text):
            break
        code = ""
        m = _FRAME.match(text)
        if m:
            frames.append(Frame(m["path"], int(m["line"]), m["func"], next_code, no))
        elif (ip := ipython.frame(text, arrow)) is not None:
            frames.append(Frame(ip.path, ip.line, ip.function, ip.code, no))
            arrow = None
        elif (a := ipython.arrow(text)) is not None:
            arrow = a
        else:
            stripped = text.strip()
            if stripped and not set(stripped) <= {"^", "~", " "}:
                code = stripped
        next_code = code
    frames.reverse()
    return frames


def innermost_user_frame(frames: list[Frame]) -> Frame | None:
    for frame in reversed(frames):
        if not frame.is_library:
            return frame
    return None
