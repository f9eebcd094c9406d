"""Bytes [start, end) of an open file, read through as a stream: a big file's range for the scanner and for
the first-error pass."""

from __future__ import annotations

import io
from typing import Any, BinaryIO, cast


class Bounded(io.RawIOBase):
    """Bytes [start, end) of a file, read through."""

    def __init__(self, fh: BinaryIO, start: int, end: int) -> None:
        fh.seek(start)
        self.fh, self.left = fh, end - start

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence != 1 or offset > 0:
            raise OSError("a file range only seeks back from where it is")
        self.fh.seek(offset, 1)
        self.left -= offset
        return self.fh.tell()

    def readinto(self, b: Any) -> int:
        if self.left <= 0:
            return 0
        view = memoryview(b)
        if len(view) > self.left:
            view = view[: self.left]
        n = cast(Any, self.fh).readinto(view) or 0
        self.left -= n
        return n

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        n = self.left if n < 0 else min(n, self.left)
        data = self.fh.read(n)
        self.left -= len(data)
        return data
