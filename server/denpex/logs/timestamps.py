"""Wall-clock stamps on log lines, to order the files of one job by when each failed.

The formats are the ones real multi-rank jobs print: glog/c10d headers (``E1201 08:15:03.123456``,
PyTorch's C++ logger and torchrun's agent), ISO dates (Python logging, Slurm, SGLang's
``[2026-12-01 08:15:03 TP0]``), and vLLM's ``INFO 12-01 08:15:03`` (its logger's ``%m-%d %H:%M:%S``).
The year is dropped (glog and vLLM do not print one): a key is (month, day, seconds of day), which
orders the lines of one job unless it runs across New Year.
"""

from __future__ import annotations

import re

Stamp = tuple[int, int, float]

_GLOG = re.compile(r"(?<![A-Za-z0-9])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(\.\d{1,9})?")
_ISO = re.compile(r"(?<!\d)\d{4}-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)([.,]\d{1,9})?")
_VLLM = re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(\.\d{1,6})?")


def stamp_of(text: str) -> Stamp | None:
    """The first wall-clock stamp in a line, or None."""
    if ":" not in text:
        return None
    for pattern in (_GLOG, _ISO, _VLLM):
        m = pattern.search(text)
        if m is None:
            continue
        month, day, hh, mm, ss = (int(m.group(i)) for i in range(1, 6))
        if not (1 <= month <= 12 and 1 <= day <= 31 and hh < 24 and mm < 60 and ss < 61):
            continue
        frac = float(m.group(6).replace(",", ".")) if m.group(6) else 0.0
        return (month, day, hh * 3600 + mm * 60 + ss + frac)
    return None


def last_stamp(lines: list[tuple[int, str]], text: str) -> Stamp | None:
    """The stamp of a line, else of the nearest stamped line before it (a traceback has none)."""
    own = stamp_of(text)
    if own is not None:
        return own
    for _no, line in reversed(lines):
        s = stamp_of(line)
        if s is not None:
            return s
    return None


def format_stamp(s: Stamp) -> str:
    secs = s[2]
    return f"{s[0]:02d}-{s[1]:02d} {int(secs) // 3600:02d}:{int(secs) // 60 % 60:02d}:{secs % 60:06.3f}"
