"""Stream a log in fixed-size chunks and report signature hits with original line numbers.

Memory stays flat: a chunk, the previous chunk (for context lines), and bounded
aggregates. Only lines that contain a prefilter anchor are decoded.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, ClassVar

from denpex.errors import DenpexError
from denpex.logs.attribution import Attribution, attribute, split_glued
from denpex.logs.bytecount import Buffer, count_newlines
from denpex.logs.mapped import buffer_of, mapped
from denpex.logs.matcher import Hit, Matcher
from denpex.logs.normalise import MAX_LINE_CHARS, decode, segments

CHUNK = 1 << 20  # fits in L2: the read, the search and the newline count all run on cached bytes
MAX_READ = 4 << 20  # reads grow up to this where lines are long (see _Reader.grow; 8 MiB was slower)
MAX_CARRY = 32 << 20  # a line longer than this is cut into pieces that share one line number
HEAD = 65536


@dataclass
class LineHit:
    line: int  # 1-based line of the original input
    text: str  # the cleaned piece of the line that matched
    hits: list[Hit]
    who: Attribution
    offset: int  # byte offset of the line start


@dataclass
class ScanStats:
    bytes: int = 0
    lines: int = 0
    candidates: int = 0
    binary_bytes: int = 0  # NUL bytes seen: a hint that the input is not text
    truncated_last_line: bool = False
    head: Buffer = b""  # the stream's first HEAD bytes, as read (a file's launch lines, frameworks)


ContextFn = Callable[[int], list[tuple[int, str]]]


class Window:
    """The bytes of the previous and current chunk, to recover lines before a hit.

    A chunk buffer may hold a partial line past its end (``cur_end``/``prev_end``): it is
    scanned again with the next chunk.
    """

    def __init__(self) -> None:
        self.prev: Buffer = b""
        self.prev_first_line = 1
        self.prev_end = 0
        self.cur: Buffer = b""
        self.cur_first_line = 1
        self.cur_end = 0
        self.known: tuple[int, int] = (-1, 0)  # (byte, line) of the line being reported: no recount

    def lines_before(self, cur_pos: int, n: int) -> list[tuple[int, str]]:
        """Up to n (line number, text) pairs ending before byte cur_pos of the current chunk."""
        out: list[tuple[int, str]] = []
        if self.known[0] == cur_pos:
            line_no = self.known[1]
        else:
            line_no = self.cur_first_line + count_newlines(self.cur, 0, cur_pos)
        for buf, end in ((self.cur, cur_pos), (self.prev, self.prev_end)):
            if buf is self.prev:
                line_no = self.cur_first_line
            while len(out) < n and end > 0:
                stop = end - 1 if buf[end - 1 : end] == b"\n" else end
                start = buf.rfind(b"\n", 0, stop) + 1
                line_no -= 1
                out.append((line_no, decode(buf[start : min(stop, start + 4000)])))
                end = start
            if len(out) >= n:
                break
        out.reverse()
        return out

    def prime(self, data: Buffer) -> None:
        """Start with the bytes before the stream (whole lines): they number 0, -1, ... backwards."""
        self.cur, self.cur_end, self.cur_first_line = data, len(data), 1 - count_newlines(data, 0, len(data))


def _seekable(stream: BinaryIO) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, OSError, ValueError):
        return False


class _Reader:
    """Chunks of a stream, read into two buffers used in turn.

    A fresh 8 MiB bytes object per read costs a page-faulted allocation and a copy (about 0.5 s per
    GiB here, against 0.14 s reading into a buffer already mapped). Two buffers, because the window
    keeps the previous chunk for the lines before a hit: a chunk is valid until the next-but-one
    read. The pairs are pooled across scans (a thousand small files would otherwise each zero
    16 MiB); a short read (the end of a file, a pipe) returns a copy of what it read, so a pooled
    buffer keeps its size.

    A chunk's partial last line is read and searched again with the next chunk: with lines of
    hundreds of KiB (progress bars redrawn with bare CRs) that was a third of the file again
    (1,391 chunks of 1 MiB for a 1 GiB file). grow() doubles the reads, up to MAX_READ.
    """

    _free: ClassVar[list[list[bytearray]]] = []

    def __init__(self, stream: BinaryIO, map_big: bool = False) -> None:
        self.stream = stream
        self.readinto = getattr(stream, "readinto", None)
        self.bufs: list[bytearray] | None = None
        self.turn = 0
        self.size = CHUNK
        self.map = mapped(stream) if map_big else None  # a big regular file: its pages, not copies

    def back(self, k: int) -> None:
        """The last k bytes are read again with the next chunk (the stream is seekable)."""
        if self.map is not None:
            self.map.back(k)
        else:
            self.stream.seek(-k, 1)

    def grow(self) -> None:
        """Read twice as much from now on (up to MAX_READ): the lines are long."""
        self.size = min(MAX_READ, self.size * 2)

    def read(self) -> Buffer:
        if self.map is not None:
            return self.map.read(self.size)  # type: ignore[return-value]  # bytes' methods, see MappedChunk
        if self.readinto is None:
            return self.stream.read(self.size)
        if self.bufs is None:
            try:
                self.bufs = self._free.pop()
            except IndexError:
                self.bufs = [bytearray(CHUNK), bytearray(CHUNK)]
            if len(self.bufs[0]) != CHUNK:  # pooled under another chunk size (tests change it)
                self.bufs = [bytearray(CHUNK), bytearray(CHUNK)]
        self.turn ^= 1
        if len(self.bufs[self.turn]) != self.size:  # grown: the other buffer (the window's) stays as it is
            self.bufs[self.turn] = bytearray(self.size)
        buf = self.bufs[self.turn]
        try:
            n = self.readinto(buf) or 0
        except (NotImplementedError, io.UnsupportedOperation):  # a raw stream with read() only
            self.readinto = None
            self.close()
            return self.stream.read(self.size)
        return buf if n == len(buf) else buf[:n]

    def close(self) -> None:
        """Give the buffers back; no chunk read through them is used after this."""
        if self.map is not None:
            self.map.close()
        if self.bufs is not None and len(self._free) < 4 and all(len(b) == CHUNK for b in self.bufs):
            self._free.append(self.bufs)
        self.bufs = None


def iter_line_hits(
    stream: BinaryIO,
    matcher: Matcher,
    stats: ScanStats,
    on_context: Callable[[LineHit, Window, int], None] | None = None,
    progress: Callable[[int], None] | None = None,
    window: Window | None = None,
    grow: bool = True,
) -> Iterator[LineHit]:
    """Yield every line (or glued piece of a line) that matches at least one signature.

    A window given already holds the bytes before the stream (a range of a bigger file). With grow,
    reads grow where lines are long (_Reader.grow); the first-error pass reads in fixed chunks, as its
    ranges of a big file must start where one pass's chunks start (first_error_ranges.chunk_starts).
    Chunks are neither joined nor cut by copying: a partial last line is read again with the
    next chunk when the stream can seek back (files), and only carried over when it cannot (pipes).
    """
    reader = _Reader(stream, map_big=True)
    try:
        yield from _line_hits(reader, stream, matcher, stats, on_context, progress, window, grow)
    finally:
        reader.close()


def _line_hits(
    reader: _Reader,
    stream: BinaryIO,
    matcher: Matcher,
    stats: ScanStats,
    on_context: Callable[[LineHit, Window, int], None] | None,
    progress: Callable[[int], None] | None,
    window: Window | None,
    grow: bool,
) -> Iterator[LineHit]:
    window = Window() if window is None else window
    seekable = _seekable(stream)
    carry: bytes | bytearray = b""  # slices: bytes of a mapped chunk, a bytearray of a buffer
    line_base = 1  # line number of the first byte of `buf`
    carry_continues = False  # carry is the tail of an over-long line already reported on
    while True:
        data = reader.read()
        eof = not data
        if stats.bytes == 0 and not carry and not stats.head:
            stats.head = bytes(data[:HEAD])
        buf = carry + buffer_of(data) if carry else data
        if not buf:
            break
        if eof:
            cut = len(buf)
        else:
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                if len(buf) < MAX_CARRY:
                    carry = bytes(buf)  # not the reader's buffer: it is read into again
                    continue
                cut = len(buf)  # over-long line: scan what we have, keep numbering
        tail = len(buf) - cut
        if grow and tail > len(data) // 4 and not eof:
            reader.grow()
        if tail and seekable and tail <= len(data):
            reader.back(tail)  # the partial line is read again, whole, with the next chunk
            carry = b""
        else:
            carry = buf[cut:]
        if stats.bytes == 0:
            stats.binary_bytes = _binary_bytes(buf[: min(cut, 65536)])
        stats.bytes += cut
        window.prev, window.prev_first_line, window.prev_end = window.cur, window.cur_first_line, window.cur_end
        window.cur, window.cur_first_line, window.cur_end = buf, line_base, cut
        # newlines_before/in_buf: counted by the native search in its pass, else None (counted here)
        offsets, newlines_before, newlines_in_buf = matcher.scan_chunk(buf)
        next_line_start = 0  # matches before this byte belong to a line already checked
        counted_to = 0
        line_no = line_base
        for i, pos in enumerate(offsets):
            if pos < next_line_start:
                continue
            if pos >= cut:
                break  # in the partial line: scanned with the next chunk
            start = buf.rfind(b"\n", 0, pos) + 1
            end = buf.find(b"\n", pos, cut)
            if end < 0:
                end = cut
            if newlines_before is not None:
                line_no = line_base + newlines_before[i]
            else:
                line_no += count_newlines(buf, counted_to, start)
                counted_to = start
            next_line_start = end + 1
            stats.candidates += 1
            window.known = (start, line_no)
            yield from _check_line(buf, start, end, line_no, matcher, window, on_context)
        if newlines_in_buf is not None:  # the bytes past cut (a partial line) hold none
            newlines = newlines_in_buf
        else:
            newlines = (line_no - line_base) + count_newlines(buf, counted_to, cut)
        stats.lines += newlines
        line_base += newlines
        carry_continues = cut == len(buf) and not eof and not buf.endswith(b"\n")
        if progress is not None:
            progress(stats.bytes)
        if eof:
            if cut and not buf.endswith(b"\n"):
                stats.lines += 1
                stats.truncated_last_line = not carry_continues
            break


def _check_line(
    body: Buffer,
    start: int,
    end: int,
    line_no: int,
    matcher: Matcher,
    window: Window,
    on_context: Callable[[LineHit, Window, int], None] | None,
) -> Iterator[LineHit]:
    raw = body[start:end]
    # A huge line is checked in windows around each anchor, not as a whole.
    pieces = _windows(raw, matcher) if len(raw) > 4 * MAX_LINE_CHARS else [decode(raw)]
    for piece in pieces:
        for seg in segments(piece):
            if "\x00" in seg:
                seg = seg.replace("\x00", "")
            for _off, part in split_glued(seg):
                hits = matcher.match_text(part)
                # lines without a signature still matter to the collector (NCCL sequence
                # numbers, torchrun's Root Cause table), so every candidate piece is reported
                lh = LineHit(line=line_no, text=part[:2000], hits=hits, who=attribute(part), offset=start)
                if on_context is not None:
                    on_context(lh, window, start)
                yield lh


def _windows(raw: Buffer, matcher: Matcher) -> list[str]:
    out: list[str] = []
    last_end = -1
    for pos in matcher.candidate_offsets(raw):
        if pos < last_end:
            continue
        lo = max(0, pos - MAX_LINE_CHARS)
        hi = min(len(raw), pos + MAX_LINE_CHARS)
        out.append(decode(raw[lo:hi]))
        last_end = hi
        if len(out) >= 64:
            break
    return out


_TEXT_BYTES = bytes(range(32, 127)) + b"\t\n\r\x1b\x0c\x08"


def _binary_bytes(sample: bytes | bytearray) -> int:
    """Bytes in the sample that no text log holds (NUL and stray control bytes)."""
    return len(sample.translate(None, _TEXT_BYTES + bytes(range(128, 256))))


def open_log(path: str, display: str) -> BinaryIO:
    """Open a log for reading bytes; an unreadable one is a DenpexError of one line naming `display`."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise DenpexError(f"{display}: no such file") from None
    except PermissionError:
        raise DenpexError(f"{display}: permission denied") from None
    except IsADirectoryError:
        raise DenpexError(f"{display}: is a directory") from None
    except OSError as exc:
        raise DenpexError(f"{display}: cannot read: {exc.strerror or exc}") from None
