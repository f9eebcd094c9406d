"""Turn raw terminal bytes into matchable text without losing the line they came from.

The log keeps its own line numbering: one input line (split on b"\\n" only) stays one line,
even when it holds bare-CR progress-bar frames, ANSI colour or invalid UTF-8.
"""

from __future__ import annotations

import re

# CSI (ESC[ ... final), OSC (ESC] ... BEL or ST), other two-byte ESC sequences, and C1 forms.
_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b]{0,4096}(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
)
# What is left when a tool strips ESC but not the rest: "[36m", "[0m", "[1;31m", "[K".
_HALF_ANSI = re.compile(r"\[(?:\d{1,3}(?:;\d{1,3}){0,4})?[mK]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

MAX_LINE_CHARS = 16_384  # longer lines are matched in windows (see scanner)


def decode(raw: bytes | bytearray) -> str:
    """Bytes to text: UTF-8 where valid, U+FFFD elsewhere; never raises."""
    return raw.decode("utf-8", errors="replace")


def strip_ansi(text: str) -> str:
    if "\x1b" in text or "\x9b" in text or "\x9d" in text:
        text = _ANSI.sub("", text)
    if "[" in text and ("m" in text or "K" in text):
        text = _HALF_ANSI.sub("", text)
    return text


def clean_already(text: str) -> bool:
    """True when clean(text) would return text unchanged (a cheap test: most log lines pass it).

    clean() removes escape sequences and C1 forms, CR and control characters (none in printable
    text) and half-stripped colour codes ("[0m", "[1;31m", "[K"), which need a "[" and the pattern.
    """
    return text.isprintable() and ("[" not in text or _HALF_ANSI.search(text) is None)


def clean(text: str) -> str:
    """One visible line: ANSI and control characters removed, trailing CR dropped."""
    text = strip_ansi(text)
    if "\r" in text:
        text = text.rstrip("\r")
    return _CONTROL.sub("", text)


def segments(text: str) -> list[str]:
    """Split a cleaned line at bare CRs (progress-bar frames); every frame is kept.

    A terminal would only show the last frame, but an error glued after a progress bar
    (or a bar redrawn after an error) must not be lost.
    """
    text = strip_ansi(text).rstrip("\r")
    if "\r" not in text:
        return [_CONTROL.sub("", text)]
    parts = [_CONTROL.sub("", p) for p in text.split("\r")]
    return [p for p in parts if p.strip()] or [""]
