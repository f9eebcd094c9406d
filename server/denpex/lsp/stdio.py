"""Bounds on what a client can make the server allocate while reading stdin. Free of pygls and
lsprotocol: the start-up path (boot.py) reads through it before either is imported."""

from __future__ import annotations

import sys
from typing import Protocol

# An LSP message larger than this is refused (log documents are analysed up to 64 MiB).
MAX_MESSAGE_BYTES = 256 << 20
MAX_HEADER_LINE = 64 << 10


class Readable(Protocol):
    def readline(self, limit: int = -1, /) -> bytes: ...

    def read(self, n: int = -1, /) -> bytes: ...


class BoundedStdin:
    """stdin as pygls' stdio loop reads it, with bounds on what a client can make it allocate.

    pygls reads a body with `stdin.read(Content-Length)`, which allocates the whole claimed length up
    front: `Content-Length: 1000000000000` killed the server with MemoryError. A claim over
    MAX_MESSAGE_BYTES is answered with one byte that is not JSON, so pygls logs "Unable to handle
    message" and goes back to reading headers; the refused body's bytes are then skipped as garbage
    header lines. Header lines are read at most MAX_HEADER_LINE bytes at a time, so a newline-free
    stream of garbage cannot grow one line forever.
    """

    def __init__(self, raw: Readable) -> None:
        self.raw = raw

    def readline(self) -> bytes:
        return self.raw.readline(MAX_HEADER_LINE)

    def read(self, n: int) -> bytes:
        if n > MAX_MESSAGE_BYTES:
            print(f"denpex: refused an LSP message of {n} bytes (over {MAX_MESSAGE_BYTES})", file=sys.stderr)
            return b"\x00"
        return self.raw.read(n)
