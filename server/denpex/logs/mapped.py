"""A big regular file read through memory maps instead of read() into buffers.

read() copies every byte from the page cache into the process: 0.18-0.21 s of system time per GiB
here, a third of a scan's CPU and more than the whole gap to ripgrep, which maps its input. A map
hands the scanner the page cache's own pages. The file is mapped a window at a time and a window
is unmapped once no chunk refers to it, so the pages a process holds mapped (its RSS) stay at a few
windows, not the whole file.

A chunk (MappedChunk) offers what the scanner and its collectors use of a bytes object (len, find,
rfind, slicing into bytes, endswith) on a span of a window, and `view` (buffer_of) for what reads a
buffer: the native search, the crate and the newline count.

Maps are off unless DENPEX_MMAP=1: on an idle 2-core machine (2026-12-03) they saved the
copy's system time but the scan then read from memory instead of a cache-warm buffer, so the wall
time was the same on every log shape and key-dense logs cost 0.2-0.4 s more CPU per GiB (the
chunk's Python-level find/slice calls); on a loaded machine (2026-12-02) they saved 0.1-0.5 s of
CPU per GiB. With the switch on, a map is used only for regular files of at least MIN_BYTES. A
file cut shorter by another process while it is read ends where it was cut (its size is checked at
each new window); one cut inside the window being read makes that read fail with SIGBUS, as in any
program that maps its input (ripgrep has --no-mmap for it).
"""

from __future__ import annotations

import io
import mmap
import os
import stat
from typing import Any, BinaryIO

MIN_BYTES = 16 << 20  # below this a read() costs less than setting up maps
WINDOW = 8 << 20  # bytes per map (a multiple of the page size); chunks never cross a window's end


class MappedChunk:
    """Bytes [base, base + n) of a window, with the bytes methods the scanner calls (positions relative
    to the chunk, as in the bytes object a read() would have returned)."""

    __slots__ = ("_base", "_map", "_n", "_view")

    def __init__(self, window: mmap.mmap, view: memoryview, base: int, n: int) -> None:
        self._map, self._base, self._n = window, base, n
        self._view = view[base : base + n]

    @property
    def view(self) -> memoryview:
        """The chunk as a buffer (the native search and the newline count read it without a copy)."""
        return self._view

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def _span(self, start: int | None, end: int | None) -> tuple[int, int]:
        n = self._n
        s = 0 if start is None else (max(0, start + n) if start < 0 else min(start, n))
        e = n if end is None else (max(0, end + n) if end < 0 else min(end, n))
        return self._base + s, self._base + max(s, e)

    def _search_span(self, start: int | None, end: int | None) -> tuple[int, int] | None:
        """bytes.find's span: None where it finds nothing, even b'' (a start past the end, or past end)."""
        n = self._n
        s = 0 if start is None else (max(0, start + n) if start < 0 else start)
        e = n if end is None else (max(0, end + n) if end < 0 else min(end, n))
        return None if s > n or s > e else (self._base + s, self._base + e)

    def find(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        span = self._search_span(start, end)
        i = self._map.find(sub, *span) if span is not None else -1
        return i - self._base if i >= 0 else -1

    def rfind(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        span = self._search_span(start, end)
        i = self._map.rfind(sub, *span) if span is not None else -1
        return i - self._base if i >= 0 else -1

    def endswith(self, suffix: bytes) -> bool:
        k = len(suffix)
        return k <= self._n and self._map[self._base + self._n - k : self._base + self._n] == suffix

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a mapped chunk is sliced with [a:b] only")
        a, b = self._span(key.start, key.stop)
        return self._map[a:b]

    def __bytes__(self) -> bytes:
        return self._map[self._base : self._base + self._n]



def buffer_of(data: bytes | bytearray | memoryview | MappedChunk) -> bytes | bytearray | memoryview:
    """What a function that takes a buffer (the native search, the crate, stringzilla) is given of data."""
    return data.view if isinstance(data, MappedChunk) else data


class MappedFile:
    """Chunks of bytes [pos, end) of an open regular file, each inside one map of WINDOW bytes."""

    def __init__(self, fd: int, pos: int, end: int, tail: bytes = b"") -> None:
        self.fd, self.pos, self.end = fd, pos, end
        self.tail = tail  # bytes read after the file's (a stream that adds a last line: first_error._WithEnd)
        self._win: mmap.mmap | None = None
        self._view: memoryview | None = None
        self._win_start = 0  # file offset of the window's first byte
        self._win_len = 0

    def read(self, size: int) -> MappedChunk | bytes:
        n = min(size, self.end - self.pos)
        if n > 0 and (self._win is None or not (self._win_start <= self.pos
                                                and self.pos + n <= self._win_start + self._win_len)):
            # a file cut shorter since (logrotate's copytruncate) ends here: its old length would fault
            self.end = min(self.end, os.fstat(self.fd).st_size)
            n = min(size, self.end - self.pos)
            if n > 0:
                self._remap(n)
        if n <= 0:
            tail, self.tail = self.tail, b""
            return tail
        assert self._win is not None and self._view is not None
        chunk = MappedChunk(self._win, self._view, self.pos - self._win_start, n)
        self.pos += n
        return chunk

    def back(self, k: int) -> None:
        """The last k bytes read are read again with the next chunk (a partial line)."""
        self.pos -= k

    def _remap(self, n: int) -> None:
        # the old window stays mapped while a chunk of it is alive (the scanner's previous chunk, for the
        # lines before a hit); it is unmapped when the last of them goes
        start = self.pos - self.pos % mmap.ALLOCATIONGRANULARITY
        length = min(max(WINDOW, self.pos + n - start), self.end - start)
        win = mmap.mmap(self.fd, length, access=mmap.ACCESS_READ, offset=start)
        if hasattr(win, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
            win.madvise(mmap.MADV_SEQUENTIAL)
        self._win, self._view, self._win_start, self._win_len = win, memoryview(win), start, length

    def close(self) -> None:
        self._win = self._view = None


def mapped(stream: BinaryIO | Any) -> MappedFile | None:
    """A MappedFile over what is left of `stream` (an open file, or a Bounded range of one) when it is a
    regular file of at least MIN_BYTES, else None (read it as before)."""
    if os.environ.get("DENPEX_MMAP") != "1":
        return None
    from denpex.logs.bounded import Bounded

    tail = b""
    inner = getattr(stream, "mapped_inner", None)  # a wrapper that adds bytes at the end of its stream
    if callable(inner):
        stream, tail = inner()
    try:
        if isinstance(stream, Bounded):
            fh, pos = stream.fh, stream.fh.tell()
            end = pos + stream.left
        elif isinstance(stream, (io.BufferedReader, io.FileIO)):
            fh, pos = stream, stream.tell()
            end = -1
        else:
            return None
        fd = fh.fileno()
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        end = st.st_size if end < 0 else min(end, st.st_size)
        if end - pos < MIN_BYTES:
            return None
        return MappedFile(fd, pos, end, tail)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
