"""The first error of a log that no rule names, found by the shape of its lines.

When the rule book finds no initiating failure, the reader still wants the line a person would point
at. This pass finds it by structure, not by known text. A line's *message* is what is left after
launcher, timestamp, level, logger and source-position prefixes (``[rank1]:``, ``E1201 08:15:03.1 574
api.py:12]``, ``ERROR 12-01 08:15:03 [core.py:383]``, ``(APIServer pid=7)``, ``2024-03-06T17:53:31Z
ERROR shard-manager:`` ...), and a candidate is, by kind:

* ``exception``: ``Name: ...`` at the start of a message, ``Name`` ending in Error/Exception/Failure/Fault
  (dotted names too: ``torch.AcceleratorError:``); the line that ends a Python traceback or follows a
  ``raise`` line (any name: ``torch._dynamo.exc.Unsupported:``); C++'s ``what():``; Rust/Go panics;
* ``status``: an absl/XLA status code opening the message (``INTERNAL:``, ``INVALID_ARGUMENT:`` ...);
* ``assertion``: ``Assertion ... failed``, ``X_ASSERT(...) failed``, ``Check failed``, ``RET_CHECK
  failure``, ``Failed:`` opening a message with a source position (``Failed: Cuda error x.cuh:368 '...'``);
* ``signal``: Segmentation fault, SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGABRT, ``Fatal Python error``,
  ``signal N`` (9 and 15 are a kill: collateral);
* ``error-code``: the word error with a number (``error 222``, ``Error: 222``, ``... error ... (700)``),
  never 0, in a record below ERROR never;
* ``error-record``: a record logged at ERROR/FATAL/CRITICAL (glog E/F), a weak candidate.

Collateral lines only report a failure: torchrun's ChildFailedError, Root Cause table and
``failed (exitcode: ...)``, ``terminate called after throwing``, traceback headers, NCCL watchdog
timeouts, kills (SIGKILL, SIGTERM, ``exitcode: -9``), "see root cause above", and every line a rule
of the book calls collateral or context. Indented lines (frames, code, details) are never candidates.

The answer is the first candidate in line order that is not collateral (a file's lines are in the
order they were written; across files the caller orders the answers as the verdicts are ordered). A
weak error record that only announces what follows (a traceback starts within 3 lines, or it ends
with ':') gives way to the first strong candidate of that event, unless that one repeats its message
(then the record said it first); an exception whose message ends with ':' ("... raised:") gives way
to an exception on the next lines that it wraps. A log whose candidates are all collateral gets no answer, only
"the initiating error is not in this log". The pass costs nothing where a rule found an initiating
failure: the callers run it only when none was found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import ahocorasick_rs

from denpex.logs import native, scanner
from denpex.logs.attribution import Attribution, attribute, strip_prefixes
from denpex.logs.bytecount import Buffer
from denpex.logs.mapped import buffer_of
from denpex.logs.matcher import Hit, Matcher
from denpex.logs.normalise import clean, decode
from denpex.logs.ranks import fill
from denpex.logs.scanner import LineHit, ScanStats, Window, iter_line_hits
from denpex.logs.timestamps import last_stamp
from denpex.logs.traceback import Frame, frames_before

CONTEXT = 200  # lines kept before an answer (its traceback's frames are read from them)
EVENT_LINES = 3  # a traceback header this close after an error record makes the record its announcement
ANNOUNCE_LINES = 10  # ... and a record ending with ':' announces what its next lines say
MAX_BLOCK = 2000  # lines after a traceback header in which its exception line is looked for
EVENT_SPAN = 200  # lines after an announcing record in which its event's first strong line is looked for
MAX_COLLATERAL = 8
NOT_HERE = "the initiating error is not in this log"
NOT_KNOWN = "not a known CUDA-graph failure"
_END = "\x00denpex:end-of-log\x00"  # a last line appended to the stream: open tracebacks end there

# byte keys: a line holding none of them is never decoded (each candidate pattern needs one)
KEYS: tuple[bytes, ...] = (
    b"rror", b"RROR", b"xception", b"XCEPTION", b"ATAL", b"atal", b"RITICAL", b"ailed", b"AILED", b"ailure",
    b"ssert", b"SSERT", b"SIGS", b"SIGB", b"SIGI", b"SIGF", b"SIGA", b"BORT", b"egmentation", b"ignal", b"bort", b"ore dumped", b"llegal instruction",
    b"loating point", b"what():", b"anic", b"Fault", b"INTERNAL", b"INVALID_ARGUMENT", b"FAILED_PRECONDITION",
    b"RESOURCE_EXHAUSTED", b"UNIMPLEMENTED", b"UNAVAILABLE", b"DEADLINE_EXCEEDED", b"NOT_FOUND",
    b"OUT_OF_RANGE", b"DATA_LOSS", b"PERMISSION_DENIED", b"UNAUTHENTICATED", b"Traceback", b"raise ",
    _END.encode(),
)

# A chunk of the log whose lines cannot change the answer is not read line by line (chunk_is_quiet):
# while no traceback is open and no candidate waits for its event, a line matters only if it is a
# candidate or opens a traceback, and each of those needs, in its cleaned text, one of these literals
# (an exception name's suffix, a status, an assertion or check, a signal, a bare "Error:"/"Fatal:",
# a traceback header, a raise line) or a shape that native.loud finds (a level word or glog letter of
# an error record, an error code, and the bytes whose cleaning could join text into a new word). A
# chunk with colour codes is asked the same about its bytes without them (native.unansi: exact, or none).
SHAPE_KEYS: tuple[bytes, ...] = (
    b"Error", b"Exception", b"Failure", b"Fault", b"what():", b"panic", b"Fatal",
    b"INTERNAL:", b"INVALID_ARGUMENT:", b"FAILED_PRECONDITION:", b"RESOURCE_EXHAUSTED:", b"UNIMPLEMENTED:",
    b"UNAVAILABLE:", b"DEADLINE_EXCEEDED:", b"ABORTED:", b"NOT_FOUND:", b"OUT_OF_RANGE:", b"DATA_LOSS:",
    b"UNKNOWN:", b"PERMISSION_DENIED:", b"UNAUTHENTICATED:", b"ALREADY_EXISTS:",
    b"Assertion", b"ASSERT", b"Check failed", b"RET_CHECK failure", b"Failed:", b"FAILED:",
    b"Segmentation fault", b"SIGSEGV", b"SIGBUS", b"SIGILL", b"SIGFPE", b"SIGABRT", b"ignal ", b"Bus error",
    b"Illegal instruction", b"Floating point exception", b"Aborted", b"MPI_ABORT", b"MPI_Abort",
    b"Traceback (most recent call last)", b"raise ",
)
SKIP_QUIET = True  # tests turn it off to compare with a pass that reads every chunk
ESC_READ_LINES = 32  # a chunk with colour codes and more lines with a key than this is cleaned to test it

_LEVELS = {"DEBUG": "debug", "TRACE": "debug", "INFO": "info", "NOTICE": "info", "WARN": "warning",
           "WARNING": "warning", "ERROR": "error", "FATAL": "fatal", "CRITICAL": "fatal",
           "I": "info", "W": "warning", "E": "error", "F": "fatal"}
_ERROR_LEVELS = ("error", "fatal")
_PEEL = re.compile(
    r"(?P<ws>\s+)"
    r"|(?P<glog>(?P<gl>[IWEF])\d{3,4}\s\d\d:\d\d:\d\d(?:\.\d+)?(?:\s+\d+)?(?:\s+[^\s\]]+:\d+\])?)"
    r"|(?P<glogshort>(?P<gs>[IWEF])(?=\s[\w./<>-]+:\d+\]))"
    r"|(?P<srcpos>[\w./<>-]+\.\w{1,4}(?::\d+\]|\[[^\]\n]{1,20}\]))"
    r"|(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?:?)"
    r"|(?P<mdtime>\d\d-\d\d\s\d\d:\d\d:\d\d(?:[.,]\d+)?)"
    r"|(?P<syslog>[A-Z][a-z]{2}\s[\s\d]\d\s\d\d:\d\d:\d\d)"
    r"|(?P<time>\d\d:\d\d:\d\d(?:[.,]\d+)?)"
    r"|(?P<level>(?:DEBUG|TRACE|INFO|NOTICE|WARNING|WARN|ERROR|FATAL|CRITICAL)(?![\w]):?)"
    # Python logging's "%(asctime)s - %(name)s - %(levelname)s - ...": the logger's name before " - LEVEL"
    r"|(?P<dashlogger>[\w.]{1,80}(?=\s+-\s+(?:DEBUG|TRACE|INFO|NOTICE|WARNING|WARN|ERROR|FATAL|CRITICAL)\b))"
    r"|(?P<bracket>\[[^\[\]\n]{1,160}\]:?)"
    r"|(?P<brace>\{[^{}\n]{1,80}\})"
    r"|(?P<paren>\([^()\n]{0,60}\bpid=\d+[^()\n]{0,40}\))"
    r"|(?P<compose>[\w.-]{1,60}\s+\|\s)"
    r"|(?P<prog>[\w.-]{1,40}\[\d{1,8}\]:)"
    r"|(?P<stream>(?:stdout|stderr):)"
    r"|(?P<sep>[-|:](?=\s))"
)
# right after a level: a logger (ERROR:torch.distributed.api:msg) or a tracing target (ERROR shard-manager: msg)
_LOGGER = re.compile(r"[\w.]+:(?=\S)|[a-z][\w.-]*(?:::[\w.-]+)*:(?=\s)")
_BRACKET_LEVEL = re.compile(r"^\[(?:(?P<g>[IWEF])(?:\d{3,4} |:)|(?P<w>DEBUG|TRACE|INFO|NOTICE|WARNING|WARN|ERROR|FATAL|"
                            r"CRITICAL)\]|\w+ (?P<n>[IWEF]) \d{4}-)")

_NAME = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Failure|Fault)"
_EXCEPTION = re.compile(rf"^(?P<name>{_NAME})(?:\[[^\]\n]{{0,80}}\])?(?::(?:\s|$)|$)")
_ANY_EXCEPTION = re.compile(r"^(?P<name>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?:\[[^\]\n]{0,80}\])?(?::(?:\s|$)|$)")
_WHAT = re.compile(r"^what\(\):\s")
_PANIC = re.compile(r"^thread '[^'\n]{0,80}' panicked at |^panic: ")
_STATUS = re.compile(r"^(?:INTERNAL|INVALID_ARGUMENT|FAILED_PRECONDITION|RESOURCE_EXHAUSTED|UNIMPLEMENTED|"
                     r"UNAVAILABLE|DEADLINE_EXCEEDED|ABORTED|NOT_FOUND|OUT_OF_RANGE|DATA_LOSS|UNKNOWN|"
                     r"PERMISSION_DENIED|UNAUTHENTICATED|ALREADY_EXISTS):\s")
# "Failed:" opens a check macro's report only with the failing source position after it (vLLM's and NCCL's
# CUDACHECK: "Failed: Cuda error <file>:<line> '<message>'"); a status word without one is a script's echo
# ("FAILED: done at <date>") or ninja's failed build step ("FAILED: obj.o", the compiler's error follows)
_ASSERT = re.compile(r"\bAssertion\b.{0,2000}?\bfailed\b|\b[A-Z][A-Z0-9_]*ASSERT\w*\s*\(.{0,2000}\)\s*failed\b"
                     r"|\bCheck failed\b|\bRET_CHECK failure\b|^(?:Failed|FAILED):\s.{0,300}?\S\.\w{1,5}:\d{1,6}\b")
_SIGNAL = re.compile(r"\bSegmentation fault\b|\bSIG(?:SEGV|BUS|ILL|FPE|ABRT)\b|^Fatal Python error\b"
                     r"|\b[Ss]ignal (?P<num>\d{1,2})\b|\bBus error\b|\bIllegal instruction\b"
                     r"|\bFloating point exception\b|\bAborted\s+\(core dumped\)|\bMPI_ABORT was invoked\b|\bcalled MPI_Abort\b")
_CODE = re.compile(r"\berror\b(?:\s*code)?\s*[:=#]?\s*\(?(?P<n>-?\d{1,6})(?![.\d])"
                   r"|\b(?:error|fail\w*)\b.{0,300}?\((?P<p>\d{2,6})\)", re.I)
_COLLATERAL: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), why) for p, why in (
    (r"ChildFailedError", "torchrun's report that a worker failed"),
    (r"failed \(exitcode", "torchrun's agent reporting a worker's exit"),
    (r"exitcode\s*:\s*-?\d", "a worker's exit code in torchrun's failure table"),
    (r"Root Cause \(first observed failure\)", "torchrun's failure table"),
    (r"terminate called after throwing", "std::terminate reporting an exception (its what() line names it)"),
    (r"Traceback \(most recent call last\)", "a traceback header"),
    (r"Watchdog caught collective operation timeout|watchdog thread terminated|[Ww]atchdog timeout"
     r"|detected by watchdog",
     "the NCCL watchdog: this rank waited on another"),
    (r"killed by signal|SIGKILL|SIGTERM|\b[Ss]ignal (?:9|15)\b|closing signal|death signal|SignalException",
     "a process killed or stopped from outside"),
    (r"[Ss]ee (?:the )?root cause above|[Rr]oot cause above|[Ss]ee (?:the )?(?:error|logs?) above",
     "a report that points at an earlier error"),
    (r"Connection (?:closed|reset) by peer|Broken pipe", "a peer that went away"),
    (r"\bAborted\b|\bSIGABRT\b|\bsignal 6\b|\bMPI_ABORT\b|\bMPI_Abort\b",
     "an abort: the process stopped itself after another error (std::terminate, a failed assert, a watchdog)"),
    (r"^(?:KeyboardInterrupt|SystemExit)\b", "the process was told to stop"),
))
_BARE_ERROR = re.compile(r"^(?:Error|ERROR|Fatal|FATAL):\s+[A-Za-z_]")  # Rust's main() -> Err, a CLI's "Error: ..."
_SOURCE_LIKE = re.compile(r"^(?:File \"|at [\w$.<>]+\(|#\d+ |frame #\d+)")


@dataclass
class Line:
    """What one line says once its prefixes are taken off."""

    level: str | None
    message: str
    indent: int  # spaces before the message: frames, code and details are indented


def message_of(text: str) -> Line:
    """The message of a cleaned line, its logging level and indentation."""
    text = strip_prefixes(text)
    pos, level, ws = 0, None, 0
    loggers = 0  # logger or target names still allowed right after a level (ERROR shard-manager: launcher: msg)
    prev: str | None = None  # the kind of the token before
    for _ in range(16):
        m = _PEEL.match(text, pos)
        if m is None or m.end() == pos:
            lm = _LOGGER.match(text, pos) if loggers else None
            if lm is None:
                break
            pos, loggers, ws = lm.end(), loggers - 1, 0
            continue
        kind = m.lastgroup
        if kind == "ws":
            # the padding of a fixed-width level ("%(levelname)-8s": "ERROR    msg") is no indentation
            ws = 0 if prev == "level" else len(m.group().expandtabs(4))
        else:
            ws = 0
            loggers = 3 if kind == "level" else (loggers if kind == "sep" else 0)
        if kind == "level":
            level = _LEVELS[m.group("level").rstrip(":")]
        elif kind in ("glog", "glogshort"):
            level = _LEVELS[m.group("gl") or m.group("gs")]
        elif kind == "bracket":
            b = _BRACKET_LEVEL.match(m.group("bracket"))
            if b is not None:
                level = _LEVELS[b.group("g") or b.group("w") or b.group("n")]
        pos = m.end()
        prev = kind
    return Line(level, text[pos:].strip(), ws)


@dataclass
class Candidate:
    line: int
    text: str
    message: str
    kind: str
    strong: bool
    who: Attribution
    level: str | None = None
    collateral: str | None = None  # why this line only reports a failure
    context: list[tuple[int, str]] = field(default_factory=list)


def classify(line: Line) -> tuple[str, bool] | None:
    """(kind, strong) of a message, or None when it is no error line."""
    msg = line.message
    if _WHAT.match(msg):  # libstdc++ indents it under "terminate called after throwing ..."
        return "exception", True
    if not msg or line.indent >= 2 or _SOURCE_LIKE.match(msg):
        return None
    if _EXCEPTION.match(msg) or _PANIC.match(msg):
        return "exception", True
    if _STATUS.match(msg):
        return "status", True
    if _ASSERT.search(msg):
        return "assertion", True
    s = _SIGNAL.search(msg)
    if s is not None and s.group("num") not in ("0",):
        return "signal", True
    low = line.level not in (None, *_ERROR_LEVELS)
    c = _CODE.search(msg)
    if c is not None and not low and (c.group("p") or c.group("n").lstrip("-") not in ("0", "")):
        return "error-code", False
    if line.level in _ERROR_LEVELS and any(ch.isalnum() for ch in msg):
        return "error-record", False
    if not low and _BARE_ERROR.match(msg):
        return "error-record", False
    return None


def collateral_reason(msg: str, hits: list[Hit]) -> str | None:
    for pattern, why in _COLLATERAL:
        if pattern.search(msg):
            return why
    for h in hits:
        if h.signature.role in ("collateral", "context"):
            return f"a {h.signature.role} report of {h.signature.rule_id}"
    return None


class _Keys:
    """The scanner's key search over the structural keys (the native one-pass search where it is built,
    which also counts the newlines, else the crate's); match_text is the rule book's own, so each
    candidate line also says which rule (if any) calls it collateral. With a collector that is idle
    (no traceback open, no candidate waiting), a chunk that chunk_is_quiet finds quiet yields no line."""

    _search: ahocorasick_rs.BytesAhoCorasick | None = None
    _native: native.Searcher | None = None
    _shapes: native.Searcher | None = None
    _loud: Any = None
    _unansi: Any = None
    _planned = False

    def __init__(self, matcher: Matcher, collector: _Collector | None = None) -> None:
        self.matcher, self.collector = matcher, collector
        cls = type(self)
        if not cls._planned:
            cls._native, cls._planned = native.searcher(KEYS, "first-error"), True
            if cls._native is not None:
                cls._loud, cls._unansi = native.loud(), native.unansi()
                cls._shapes = native.searcher(SHAPE_KEYS, "first-error-shapes") if cls._loud is not None else None
        if cls._native is None and cls._search is None:
            cls._search = ahocorasick_rs.BytesAhoCorasick(list(KEYS), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)
        self.skipped = 0  # chunks found quiet
        self._scratch = bytearray()  # _clean_quiet's cleaned bytes
        self.clean_first = False  # the last chunk with colour codes was quiet without them

    def _idle(self) -> bool:
        c = self.collector
        return (self._shapes is not None and SKIP_QUIET and c is not None and not c.open and c.pending is None
                and not c.done)

    def _dense(self, data: Buffer) -> tuple[list[int], list[int] | None, int | None]:
        assert self._native is not None
        starts, before, total = self._native.scan(buffer_of(data))
        if any(starts[i] > starts[i + 1] for i in range(len(starts) - 1)):  # nearly in order: make it so
            pairs = sorted(zip(starts, before, strict=True))
            starts, before = [a for a, _b in pairs], [b for _a, b in pairs]
        return starts, before, total

    def _quiet(self, data: Buffer, dense: tuple[list[int], list[int] | None, int | None] | None,
               total: int | None) -> tuple[list[int], list[int] | None, int | None]:
        """What the scanner gets of a quiet chunk: no line, or only the first line with a key where a
        range's first line is still wanted (first_error_ranges.join; it changes nothing else here)."""
        c = self.collector
        if c is not None and c.skip_from_first and c.first_line is None:
            starts, before, total = dense if dense is not None else self._dense(data)
            return (starts[:1], before[:1] if before is not None else None, total) if starts else ([], [], total)
        self.skipped += 1
        return [], [], total

    def _clean_quiet(self, data: Buffer) -> int | None:
        """The newlines of a chunk with colour codes that is quiet without them, or None. Taken up to its
        last newline: the bytes after it (perhaps cut inside a colour code) are never read as a line with
        this chunk but come again with the next one; a chunk without a newline is taken whole."""
        assert self._shapes is not None
        cut = data.rfind(b"\n") + 1
        raw = memoryview(buffer_of(data))[:cut] if cut else buffer_of(data)
        # the cleaned bytes go into a buffer kept across chunks: a fresh megabyte per chunk cost more in
        # allocation and page faults than the cleaning itself
        if len(self._scratch) < len(raw):
            self._scratch = bytearray(max(len(raw), scanner.CHUNK))
        n = self._unansi(raw, self._scratch)
        if n is None or self._loud(self._scratch, n) >= 0:
            return None
        starts, _before, total = self._shapes.scan(self._scratch, n)
        return None if starts else total

    def _coloured(self, data: Buffer) -> tuple[list[int], list[int] | None, int | None]:
        """A chunk with colour codes: tested without them where it has many lines with a key (one with few
        is read at once); after a quiet one, the next is tested before its keys are searched."""
        if self.clean_first:
            total = self._clean_quiet(data)
            if total is not None:
                return self._quiet(data, None, total)
            got = self._dense(data)
            self.clean_first = len(got[0]) > ESC_READ_LINES
            return got
        got = self._dense(data)
        if len(got[0]) > ESC_READ_LINES and self._clean_quiet(data) is not None:
            self.clean_first = True
            return self._quiet(data, got, got[2])
        return got

    def scan_chunk(self, data: Buffer | memoryview) -> tuple[list[int], list[int] | None, int | None]:
        if self._native is not None and not isinstance(data, memoryview):
            if self._idle():
                assert self._shapes is not None
                at = self._loud(buffer_of(data))
                if at < 0:
                    starts, _before, total = self._shapes.scan(buffer_of(data))
                    if not starts:
                        return self._quiet(data, None, total)
                elif data[at : at + 1] == b"\x1b" and self._unansi is not None:
                    return self._coloured(data)
            return self._dense(data)
        if self._search is None:
            type(self)._search = ahocorasick_rs.BytesAhoCorasick(
                list(KEYS), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)
        assert self._search is not None
        return [start for _i, start, _e in self._search.find_matches_as_indexes(buffer_of(data))], None, None

    def candidate_offsets(self, data: Buffer | memoryview) -> list[int]:
        """Every key start in a long line's bytes (the scanner's windows): never skipped."""
        if self._native is not None and not isinstance(data, memoryview):
            return sorted(self._native.scan(buffer_of(data))[0])
        if self._search is None:
            type(self)._search = ahocorasick_rs.BytesAhoCorasick(
                list(KEYS), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)
        assert self._search is not None
        return [start for _i, start, _e in self._search.find_matches_as_indexes(buffer_of(data))]

    def match_text(self, text: str) -> list[Hit]:
        return self.matcher.match_text(text)


class _WithEnd:
    """A stream with one more line at its end, so a traceback still open there is closed. It reads into
    the scanner's buffers and seeks back as the stream does (a partial line is read again, not copied)."""

    _LAST = b"\n" + _END.encode() + b"\n"

    def __init__(self, stream: BinaryIO) -> None:
        self.stream, self.ended = stream, False
        self.can_seek = _seekable(stream)
        inner = getattr(stream, "readinto", None)
        if inner is not None:
            self.readinto = self._readinto
            self._inner = inner

    def seekable(self) -> bool:
        return self.can_seek and not self.ended

    def mapped_inner(self) -> tuple[BinaryIO, bytes]:
        """The stream and the bytes this adds after it (logs.mapped maps the stream and adds them)."""
        return self.stream, self._LAST

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.stream.seek(offset, whence)

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(n)
        if data or self.ended:
            return data
        self.ended = True
        return self._LAST

    def _readinto(self, b: Any) -> int:
        n: int = self._inner(b) or 0
        if n or self.ended:
            return n
        self.ended = True
        b[: len(self._LAST)] = self._LAST
        return len(self._LAST)


def _seekable(stream: BinaryIO) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, OSError, ValueError):
        return False


@dataclass
class FirstError:
    """The answer for one log: the first error line, or only the collateral it holds."""

    found: Candidate | None
    collateral: list[Candidate]
    frames: list[Frame] = field(default_factory=list)
    reported_by: Candidate | None = None  # an error record that announced it
    file: str | None = None

    @property
    def confidence(self) -> str:
        """Never high: no rule vouches for the line. Medium for a line that says what failed (an
        exception, status, assertion or signal), low for a bare error record or code."""
        return "medium" if self.found is not None and self.found.strong else "low"

    def to_json(self, context_n: int = 100) -> dict[str, Any]:
        coll = [{"line": c.line, "text": c.text, "rank": c.who.rank, "why": c.collateral} for c in self.collateral]
        f = self.found
        if f is None:
            return {"found": False, "known": False, "what": NOT_HERE, "confidence": "low", "collateral": coll,
                    "notes": [f"Only collateral reports were found ({_lines(len(self.collateral))}): {NOT_HERE}. "
                              "Look for an earlier error on another rank, thread or log file."],
                    "evidence": evidence_steps(None)}
        ctx = f.context[-context_n:] if context_n > 0 else []
        stamp = last_stamp(f.context, f.text)
        notes = [f"{NOT_KNOWN}: no rule of the book names this line; it is the first {_KIND_WORDS[f.kind]} "
                 "in the log, found by the shape of the line"]
        if self.reported_by is not None:
            notes.append(f"line {self.reported_by.line} ({self.reported_by.message[:80]!r}) only announces it")
        return {
            "found": True, "known": False, "what": NOT_KNOWN, "kind": f.kind, "line": f.line, "text": f.text,
            "message": f.message, "rank": f.who.rank, "local_rank": f.who.local_rank, "node": f.who.node,
            "process": f.who.process, "attribution": list(f.who.evidence), "confidence": self.confidence,
            "context": {"start_line": ctx[0][0] if ctx else f.line, "end_line": f.line,
                        "lines": [t for _n, t in ctx]},
            "frames": [fr.to_json() for fr in self.frames],
            "reported_by": ({"line": self.reported_by.line, "text": self.reported_by.text}
                            if self.reported_by is not None else None),
            "collateral": coll, "notes": notes, "evidence": evidence_steps(f),
            "stamp": list(stamp) if stamp is not None else None,
        }


def summary_line(fe: dict[str, Any]) -> str:
    """The diagnosis's summary when no rule found anything and this pass did (its JSON, any file)."""
    if not fe.get("found"):
        return f"No known CUDA-graph failure signature found; only collateral reports: {NOT_HERE}."
    where = f"{fe['file']}:{fe['line']}" if fe.get("file") else f"line {fe['line']}"
    who = (f"rank {fe['rank']}" if fe.get("rank") is not None else
           f"local rank {fe['local_rank']}" if fe.get("local_rank") is not None else "unattributed")
    return (f"No known CUDA-graph failure signature found; first error by the shape of the line ({NOT_KNOWN}): "
            f"{where} ({who}): {str(fe.get('message') or fe.get('text'))[:120]}; confidence {fe['confidence']}.")


_KIND_WORDS = {"exception": "exception", "status": "error status", "assertion": "failed assertion or check",
               "signal": "fatal signal", "error-code": "error with a code", "error-record": "error-level record"}


def evidence_steps(f: Candidate | None) -> list[str]:
    """What to run to get the evidence a diagnosis needs, from what the pipeline already offers."""
    steps = ["denpex run -- CMD: reruns the job, diagnoses its output and keeps an evidence bundle "
             "(output, nvidia-smi, collect_env, the CUDA/NCCL/torch environment); `denpex collect LOG` "
             "keeps the same for a log you already have"]
    msg = f.message if f is not None else ""
    if f is None:
        steps.insert(0, "read every rank's output: `denpex diagnose DIR` over the job's folder (torchrun "
                        "--log-dir, Slurm per-task files) orders the ranks' first errors by time; "
                        "`torchrun --tee 3` keeps each rank's stderr with a prefix")
    elif f.kind == "signal":
        steps.insert(0, "PYTHONFAULTHANDLER=1 denpex run -- CMD: the Python stack of every thread at the crash")
    if f is None or "CUDA" in msg or "cuda" in msg or "NCCL" in msg or f.kind in ("status", "error-code"):
        steps.append("denpex run --honest -- CMD: CUDA_LAUNCH_BLOCKING=1, TORCH_SHOW_CPP_STACKTRACES=1, "
                     "NCCL_DEBUG=WARN and the NCCL flight recorder, so an asynchronous error is reported "
                     "where it happened")
    steps.append("a fix is verified when `denpex run -- CMD` exits 0; `--expect-absent RULE` checks a known "
                 "rule, and this line has none")
    return steps


_BLOCK_OPENERS = ("Traceback (most recent call last)", "raise ")


class _Collector:
    def __init__(self, matcher: Matcher, base: Attribution | None, context_n: int) -> None:
        self.matcher, self.base, self.context_n = matcher, base, max(context_n, CONTEXT)
        self.found: Candidate | None = None
        self.reported_by: Candidate | None = None
        self.pending: Candidate | None = None  # a weak record that may announce its event
        self.pending_span = EVENT_LINES
        self.collateral: list[Candidate] = []
        self.open: dict[tuple[object, ...], tuple[int, Attribution]] = {}  # writer -> (block start, who)
        self.seen: set[int] = set()
        self.done = False
        self.first_line: int | None = None  # the first line seen (a range's: first_error_ranges)
        self.skip_from_first = False  # a quiet chunk before first_line still gives its first line with a key
        self.here: tuple[int, str, Window, int] | None = None  # the line being read: its number, text, window, start

    def on_line(self, line_no: int, text: str, hits: list[Hit], who: Attribution, window: Window,
                start: int) -> None:
        if self.first_line is None:
            self.first_line = line_no
        if self.done:
            return
        self.here = (line_no, text, window, start)
        who = fill(who, self.base)
        if self.open:
            self._close_blocks(line_no, window, start)
            if self.done:
                return
        if text == _END or text == _END.strip("\x00"):
            self._settle(None)
            return
        info = message_of(text)
        msg = info.message
        if info.indent < 2 and _BLOCK_OPENERS[0] in msg[:200]:
            self.open[who.key()] = (line_no, who)
        elif msg.startswith(_BLOCK_OPENERS[1]):
            self.open.setdefault(who.key(), (line_no, who))
        if self.pending is not None:
            if ("Traceback (most recent call last)" in msg and not self.pending.strong
                    and line_no - self.pending.line <= EVENT_LINES):
                self.pending_span = EVENT_SPAN
            elif line_no - self.pending.line > self.pending_span:
                self._settle(None)
                return
        got = classify(info)
        if got is None or line_no in self.seen:
            return
        self._add(Candidate(line_no, text, msg, got[0], got[1], who, info.level,
                            collateral_reason(msg, hits)), window, start)

    def _add(self, c: Candidate, window: Window | None, start: int,
             context: list[tuple[int, str]] | None = None) -> None:
        self.seen.add(c.line)
        if c.collateral is not None:
            if len(self.collateral) < MAX_COLLATERAL:
                self.collateral.append(c)
            return
        p = self.pending
        if p is not None and not c.strong:
            return  # the first weak record waits for its event; later ones add nothing
        c.context = context if context is not None else (window.lines_before(start, self.context_n) if window else [])
        if p is None:
            announces = c.message.rstrip().endswith(":")
            if c.strong and not (announces and c.kind == "exception"):
                self._settle(c)
            else:  # a weak record, or an exception ending with ':' ("... raised:"): its next lines may say more
                self.pending = c
                self.pending_span = EVENT_LINES if c.strong or not announces else ANNOUNCE_LINES
            return
        same_writer = p.who.key() == c.who.key() or p.who.rank is None or c.who.rank is None
        if not same_writer or c.line - p.line > self.pending_span or (p.strong and c.kind != "exception"):
            self._settle(None)
            return
        if _repeats(c.message, p.message):
            self._settle(None)  # the record said it first
        else:
            self.reported_by = p
            self._settle(c)

    def _settle(self, c: Candidate | None) -> None:
        """The answer is c, or the pending record when c is None."""
        if c is None:
            c = self.pending
            if c is None:
                return
            self.reported_by = None
        if c.who.rank is None and self.here is not None:
            c.who = _trailing_rank(c, *self.here)
        self.found, self.pending, self.done = c, None, True

    def _close_blocks(self, line_no: int, window: Window, start: int) -> None:
        """The exception line of each traceback (or raise line) that ended before this line."""
        for key, (opened, who) in sorted(self.open.items(), key=lambda kv: kv[1][0]):
            if opened >= line_no:
                continue
            if line_no - opened > MAX_BLOCK:
                del self.open[key]  # no exception line in reach: a traceback cut short
                continue
            got = _block_end(window.lines_before(start, line_no - opened), opened, who)
            if got == _OPEN:
                continue  # frames so far: the traceback goes on past this line
            del self.open[key]
            if got is None or got in self.seen:
                continue
            lines = window.lines_before(start, line_no - got + self.context_n)
            i = next(k for k, (n, _t) in enumerate(lines) if n == got)
            text = lines[i][1]
            info = message_of(text)
            c = Candidate(got, text, info.message, "exception", True, fill(attribute(text), self.base), info.level,
                          collateral_reason(info.message, self.matcher.match_text(text)))
            self._add(c, None, 0, context=lines[:i])
            if self.done:
                return

    def result(self) -> FirstError | None:
        self._settle(None)
        f = self.found
        if f is None:
            return FirstError(None, self.collateral) if self.collateral else None
        frames = frames_before([*f.context, (f.line, f.text)], f.who.rank, f.who.local_rank) if f.context else []
        return FirstError(f, self.collateral, frames, self.reported_by)


# TGI's launcher logs with tracing's compact format, which writes the span's fields after the message: a
# shard's stderr or traceback forwarded as one record ends in a newline, so " rank=N" stands alone on the
# line after the record's last line ("ValueError: ...", then " rank=0"). Its lines before carry no rank.
_TRAILING_RANK = re.compile(r"\s?rank=(?P<rank>\d{1,6})\s*")
_RECORD_START = re.compile(r"\s*\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d")  # a new record's timestamp ends the record
TAIL_LINES = EVENT_SPAN  # lines after the answer in which the record's trailing rank field is looked for


def _trailing_rank(c: Candidate, line_no: int, text: str, window: Window, start: int) -> Attribution:
    """c's attribution with the rank of a trailing ``rank=N`` line that closes c's record, looked for in
    the lines after c that the window holds (the line being read is at `start`, `line_no`; no more is read).
    Its evidence counts lines from c, not line numbers: a range's numbers are shifted after it (ranges)."""
    after = [(n, t) for n, t in window.lines_before(start, line_no - c.line) if n > c.line]
    if line_no > c.line:
        after.append((line_no, text))
    n = line_no
    pos = _next_start(window, start)
    while pos is not None and len(after) < TAIL_LINES:  # the chunk's lines after the one being read
        end = window.cur.find(b"\n", pos, window.cur_end)
        n += 1
        after.append((n, decode(window.cur[pos : (end if end >= 0 else window.cur_end)][:4000])))
        pos = end + 1 if 0 <= end < window.cur_end - 1 else None
    for n, t in after[:TAIL_LINES]:
        t = clean(t)
        m = _TRAILING_RANK.fullmatch(t)
        if m is not None:
            w = c.who
            return Attribution(rank=int(m.group("rank")), local_rank=w.local_rank, node=w.node, process=w.process,
                               device=w.device, evidence=[*w.evidence, f"the trailing rank={m.group('rank')} field {_lines(n - c.line)} "
                                                          "after it, which ends its record (TGI's launcher)"])
        if _RECORD_START.match(t):
            break
    return c.who


def _next_start(window: Window, start: int) -> int | None:
    """The start of the line after the one at `start` in the window's current chunk, None at its end."""
    nl = window.cur.find(b"\n", start, window.cur_end)
    return nl + 1 if 0 <= nl < window.cur_end - 1 else None


def _repeats(later: str, first: str) -> bool:
    """Does the later message repeat the first one (an exception raised with the text logged before it)?"""
    head = re.sub(r"\s+", " ", first).strip().rstrip(".:")[:60]
    return len(head) >= 20 and head in re.sub(r"\s+", " ", later)


_OPEN = -1  # _block_end: only frames so far


def _block_end(lines: list[tuple[int, str]], opened: int, who: Attribution) -> int | None:
    """The line that ends a traceback (or follows a raise line) opened at `opened`: the first line of the
    same writer after it that is neither a frame, nor indented, nor blank, when shaped like `Name: message`;
    None when another line ends it, _OPEN when every line so far is a frame."""
    for no, text in lines:
        if no <= opened:
            continue
        other = attribute(text)
        if who.rank is not None and other.rank is not None and other.rank != who.rank:
            continue
        info = message_of(text)
        msg = info.message
        if not msg or info.indent >= 2 or _SOURCE_LIKE.match(msg) or set(msg) <= {"^", "~", " "}:
            continue
        if msg.startswith(("During handling", "The above exception", "Traceback (most recent")):
            return None
        return no if _ANY_EXCEPTION.match(msg) else None
    return _OPEN


def scan(stream: BinaryIO, matcher: Matcher, base: Attribution | None = None, context: int = 100) -> FirstError | None:
    """The first error of a log (None when it has no error line at all)."""
    c = _Collector(matcher, base, context)
    drive(_WithEnd(stream), c)
    return c.result()


def drive(stream: Any, c: _Collector, window: Window | None = None) -> ScanStats:
    """Feed the collector the lines of a stream (read() / readinto() / seekable(), what the scanner calls)
    until its answer is settled or the stream ends; a window given holds the bytes before the stream."""
    keys: Any = _Keys(c.matcher, c)  # what the scanner calls of a matcher: scan_chunk, candidate_offsets, match_text
    stats = ScanStats()

    def seen(lh: LineHit, win: Window, start: int) -> None:
        c.on_line(lh.line, lh.text, lh.hits, lh.who, win, start)

    lines = iter_line_hits(stream, keys, stats, seen, None, window, grow=False)  # chunks as its ranges cut them
    try:
        for _lh in lines:
            if c.done:
                break  # the answer is settled: the rest of the log cannot change it
    finally:
        close = getattr(lines, "close", None)
        if close is not None:
            close()
    return stats


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"
