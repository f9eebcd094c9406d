"""The first-error pass skips quiet chunks (first_error.SHAPE_KEYS, native.loud) without changing an answer.

A chunk is skipped only while no traceback is open and no candidate waits, and only when no line in it
holds a shape key or a byte sequence native.loud reports. Two checks: every line on which the pass's
own functions find a candidate or a traceback opener is loud or holds a shape key (lines drawn from
the shapes' hard cases: level words, glog letters, error codes, colour codes, control bytes, Unicode
digits and spaces); and the pass gives the same answer with and without skipping on every log of the
suite and on generated logs, read in small chunks so that skipped chunks sit between the lines that matter.
"""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest

from denpex.logs import first_error, native, scanner
from denpex.logs.attribution import split_glued
from denpex.logs.diagnose import matcher_for
from denpex.logs.normalise import decode, segments
from tests.conftest import DATA

EXAMPLES = DATA.parent.parent / "examples"
needs_loud = pytest.mark.skipif(native.loud() is None or native.unansi() is None
                                or native.searcher(first_error.SHAPE_KEYS) is None,
                                reason="native key search (with loud and unansi) not built here")

# pieces of lines: what the candidate patterns look for, near misses, and what the cleaning removes
_TOKENS = (
    "ERROR", "ERROR:", "ERROR_LEVEL=3", "[ERROR]", "FATAL", "FATAL:", "CRITICAL", "CRITICAL_PATH", "Fatal:",
    "Fatal Python error", "E1201", "E1201 08:15:03.123", "F0102 ", "I1201 08:15:03.1 574 api.py:12]",
    "E api.py:12]", "E\tx.cc:3]", "[E:", "[F:", "[W1130 00:41:07.1 reducer.cpp:1430]", "[w E 2024-01-02",
    "error", "Error", "errors=0", "error_rate: 0.01", "error 222", "Error: 222", "error code 7", "error=-5",
    "error (700)", "error: 0", "ERROR #12", "--max-errors 100", "--on-error=retry", "error_count=0",
    "failed", "0 failed", "failed_requests: 0", "failed (exitcode: 1)", "(700)", "(12 ms)", "(1)", "(12)",
    "ValueError:", "ValueError", "torch.AcceleratorError: CUDA error", "KeyError['x']:", "Unsupported:",
    "what():  boom", "panic: x", "thread 'main' panicked at ", "INTERNAL: x", "UNKNOWN: y", "ABORTED: z",
    "Assertion `x` failed", "GGML_ASSERT(x) failed", "Check failed: a", "RET_CHECK failure", "Failed: /x:3",
    "FAILED: y", "Segmentation fault", "SIGSEGV", "signal 11", "Signal 9", "Bus error", "Illegal instruction",
    "Floating point exception", "Aborted (core dumped)", "MPI_ABORT was invoked", "called MPI_Abort",
    "Traceback (most recent call last):", "raise ValueError(x)", "raise", "exception_count=0", "Exception",
    "INFO", "WARNING:", "[INFO]", "[rank3]:", "[default1]:", "[rank1]:[rank2]", "step 12 | loss 2.3",
    "\x1b[31m", "\x1b[0m", "[0m", "[1;31m", "[m", "[K", "[main]", "\x00", "\x07", "\x7f", "\r", "\t", "  ",
    "Err\x1b[0mor", "ERR\x1b[1mOR", "\x1b[31mE1201 08:15:03", "(7\x1b[0m00)", "Value\x1b[KError:", "E\x1b[E1201",
    "\x1b[E", "\x1bM", "\x1b(B", "\x1b]0;title\x07", "\x1b[ 1q", "\x1b[?25l", "[\x1b[0m0m", "Trace\x1b[2mback",
    "\u00a0", "\u2003", "\u0661\u0662\u0663", "\u0663", "\u00e9", "\u2192", "\x9b", "\ufffd", ":", "=", "#",
    "(", ")", "-", "]", "[", "code", "CODE", "x", "E", "F", "C", "R", "e", "r", "o", "0", "5", "12", "2024-",
)
_SEPS = ("", "", " ", " ", ": ", "=", "\t", "|", "\u00a0")


def _line(rng: random.Random) -> str:
    return "".join(rng.choice(_TOKENS) + rng.choice(_SEPS) for _ in range(rng.randrange(1, 7)))


def _matters(raw: bytes, matcher: Any) -> bool:
    """Does the pass, idle, act on this line: a candidate or a traceback opener in one of its pieces (as
    the scanner cuts and cleans them)?"""
    for piece in [decode(raw)]:
        for seg in segments(piece):
            seg = seg.replace("\x00", "")
            for _off, part in split_glued(seg):
                info = first_error.message_of(part[:2000])
                msg = info.message
                if first_error.classify(info) is not None:
                    return True
                if info.indent < 2 and "Traceback (most recent call last)" in msg[:200]:
                    return True
                if msg.startswith("raise "):
                    return True
    return False


@needs_loud
def test_every_line_that_matters_is_loud_or_holds_a_shape_key() -> None:
    loud = native.loud()
    shapes = native.searcher(first_error.SHAPE_KEYS)
    assert loud is not None and shapes is not None
    matcher = matcher_for(None)
    rng = random.Random(22)
    mattered = 0
    for _ in range(30_000):
        raw = _line(rng).encode("utf-8", "surrogatepass")
        if _matters(raw, matcher):
            mattered += 1
            assert loud(raw) >= 0 or shapes.scan(raw)[0], raw
    assert mattered > 3000  # the draw reaches the shapes


@needs_loud
def test_every_line_that_matters_is_loud_or_holds_a_shape_key_without_its_colour_codes() -> None:
    """The test a chunk with colour codes gets: its bytes with the escape sequences taken out."""
    loud, unansi = native.loud(), native.unansi()
    shapes = native.searcher(first_error.SHAPE_KEYS)
    assert loud is not None and unansi is not None and shapes is not None
    matcher = matcher_for(None)
    rng = random.Random(23)
    cleaned = 0
    for _ in range(30_000):
        raw = _line(rng).encode("utf-8", "surrogatepass")
        clean = unansi(raw)
        if clean is None:
            continue
        cleaned += clean != raw
        if _matters(raw, matcher):
            assert loud(clean) >= 0 or shapes.scan(clean)[0], raw
    assert cleaned > 3000


@needs_loud
def test_lines_of_the_gathered_logs_that_matter_are_loud() -> None:
    loud = native.loud()
    shapes = native.searcher(first_error.SHAPE_KEYS)
    assert loud is not None and shapes is not None
    matcher = matcher_for(None)
    for path in sorted(DATA.rglob("*.log")):
        for raw in path.read_bytes().split(b"\n"):
            if _matters(raw, matcher):
                assert loud(raw) >= 0 or shapes.scan(raw)[0], (path.name, raw)


def _answers(paths: list[Path], skip: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], int]:
    """Each log's first-error answer, and the chunks skipped in all."""
    monkeypatch.setattr(first_error, "SKIP_QUIET", skip)
    matcher = matcher_for(None)
    keys: list[Any] = []
    real = first_error._Keys.__init__

    def keep(self: Any, *args: Any) -> None:
        real(self, *args)
        keys.append(self)

    monkeypatch.setattr(first_error._Keys, "__init__", keep)
    out: list[Any] = []
    for p in paths:
        with open(p, "rb") as fh:
            fe = first_error.scan(fh, matcher)
        out.append(fe.to_json() if fe is not None else None)
    monkeypatch.setattr(first_error._Keys, "__init__", real)
    return out, sum(k.skipped for k in keys)


def _suite_logs() -> list[Path]:
    return sorted(p for root in (DATA, EXAMPLES) for p in root.rglob("*")
                  if p.is_file() and p.suffix in (".log", ".out", ".err", ".txt") and "reach" not in p.parts)


@needs_loud
@pytest.mark.parametrize("chunk", [1 << 20, 2048])
def test_skipping_changes_no_answer_on_the_suite_logs(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "CHUNK", chunk)
    monkeypatch.setattr(first_error, "ESC_READ_LINES", 0)
    paths = _suite_logs()
    assert len(paths) > 100
    plain, none = _answers(paths, False, monkeypatch)
    fast, skipped = _answers(paths, True, monkeypatch)
    assert none == 0
    if chunk < 4096:
        assert skipped > 50
    for p, a, b in zip(paths, plain, fast, strict=True):
        assert a == b, p


def _generated(rng: random.Random, lines: int, colour: bool = False) -> bytes:
    """A log of quiet training lines with the hard lines (and whole tracebacks) here and there; with
    colour, the quiet lines carry colour codes as a rich console writes them."""
    out = []
    for i in range(lines):
        x = rng.random()
        if x < 0.80 and colour:
            out.append(f"[rank{i % 8}]:\x1b[32m2026-11-30 00:41:07,{i % 1000:03d}\x1b[0m | \x1b[1mINFO    \x1b[0m | "
                       f"step {i} | errors=0 | error_rate: 0.01 | failed_requests: 0 | 0 failed")
        elif x < 0.80:
            out.append(f"[rank{i % 8}]:[2026-11-30 00:41:07,{i % 1000:03d}][llm.train][INFO] - step {i} | "
                       f"errors=0 | error_rate: 0.01 | failed_requests: 0 | 0 failed")
        elif x < 0.97:
            out.append(_line(rng))
        else:
            out.append(f"[rank{i % 8}]:Traceback (most recent call last):")
            out.extend(f'[rank{i % 8}]:  File "/w/t.py", line {k}, in f' for k in range(rng.randrange(0, 4)))
            out.append(f"[rank{i % 8}]:" + _line(rng))
    return ("\n".join(out) + "\n").encode("utf-8", "surrogatepass")


@needs_loud
@pytest.mark.parametrize("seed", range(24))
def test_skipping_changes_no_answer_on_generated_logs(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "CHUNK", 1024)
    monkeypatch.setattr(first_error, "ESC_READ_LINES", 0)  # every chunk with colour codes is cleaned and tested
    rng = random.Random(seed)
    data = _generated(rng, 3000, colour=seed % 2 == 1)
    matcher = matcher_for(None)

    def answer(skip: bool) -> Any:
        monkeypatch.setattr(first_error, "SKIP_QUIET", skip)
        fe = first_error.scan(io.BytesIO(data), matcher)
        return fe.to_json() if fe is not None else None

    assert answer(True) == answer(False)


@needs_loud
def test_a_quiet_log_is_skipped_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "CHUNK", 4096)
    line = b"[rank1]:[2026-11-30 00:41:07,000][llm.train][INFO] - step 1 | errors=0 | error_rate: 0.01 | 0 failed\n"
    data = line * 2000 + b"[rank1]:ValueError: boom\n" + line * 10
    keys: list[Any] = []
    real = first_error._Keys.__init__

    def keep(self: Any, *args: Any) -> None:
        real(self, *args)
        keys.append(self)

    monkeypatch.setattr(first_error._Keys, "__init__", keep)
    fe = first_error.scan(io.BytesIO(data), matcher_for(None))
    assert fe is not None and fe.found is not None and fe.found.line == 2001
    assert keys[0].skipped >= len(data) // 4096 - 2


@needs_loud
@pytest.mark.parametrize("line", [
    b"E1201 08:15:03.123 574 api.py:12] worker gone",  # glog error record
    b"[rank1]:[E1201 08:15:03.1 x.cpp:9] lost it", b"[E: boom]", b"E api.py:12] lost", b"[w E 2024-01-02 x] y",
    b"ERROR boom", b"[ERROR] boom", b"FATAL: it", b"CRITICAL - disk", b"ERROR\xe2\x80\xa6 gone",
    b"error 222 happened", b"CUDA Error: 700", b"got error code 7", b"ERROR #12", b"error\xc2\xa05",
    b"launch failed (700)", b"x \x1b[31mred", b"a\x00b", b"a\x7fb", b"Err[0mor", b"[1;31m", b"[K", b"\xc2\x9b1m",
    b"E\xd9\xa1\xd9\xa2\xd9\xa3 08:15:03 x",  # Unicode digits
])
def test_loud_finds_what_no_literal_key_shows(line: bytes) -> None:
    loud = native.loud()
    assert loud is not None and loud(line) >= 0


@needs_loud
def test_benign_error_words_are_quiet() -> None:
    loud = native.loud()
    shapes = native.searcher(first_error.SHAPE_KEYS)
    assert loud is not None and shapes is not None
    line = (b"[rank3]:[2026-11-30 00:41:07,000][llm.train][INFO] - step 7 | errors=0 | error_rate: 0.0123 | "
            b"failed_requests: 0 | 0 failed, 0 errors | timeouts=0 | exception_count=0 | ERROR_LEVEL=3 "
            b"--max-errors 100 --on-error=retry | (errors: none) | no exceptions | mem 58.3 GiB\n")
    assert loud(line) == -1 and not shapes.scan(line)[0]
    assert loud(line * 1000) == -1


@needs_loud
def test_a_quiet_log_in_colour_is_skipped_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "CHUNK", 4096)
    monkeypatch.setattr(first_error, "ESC_READ_LINES", 4)
    line = (b"[rank1]:\x1b[32m2026-11-30 00:41:07,000\x1b[0m | \x1b[1mINFO    \x1b[0m | step 1 | errors=0 | "
            b"error_rate: 0.01 | 0 failed\n")
    rng = random.Random(7)  # lines of many lengths: the chunks end inside colour codes too
    body = b"".join(line.replace(b"step 1", b"step " + b"1" * rng.randrange(1, 40)) for _ in range(2000))
    data = body + b"[rank1]:\x1b[31mValue\x1b[0mError: boom\n" + line * 10
    keys: list[Any] = []
    real = first_error._Keys.__init__

    def keep(self: Any, *args: Any) -> None:
        real(self, *args)
        keys.append(self)

    monkeypatch.setattr(first_error._Keys, "__init__", keep)
    fe = first_error.scan(io.BytesIO(data), matcher_for(None))
    assert fe is not None and fe.found is not None and fe.found.line == 2001
    assert fe.found.message.startswith("ValueError: boom")
    assert keys[0].skipped >= len(data) // 4096 - 2


@needs_loud
@pytest.mark.parametrize("raw", [b"a\x1b[31mError\x1b[0m b\nx\x1b[1;32mok", b"\x1b[Kline\x1b[2J", b"q\x1b[?25lw",
                                 b"\x1bMup", b"plain\n"])
def test_unansi_takes_out_what_the_cleaning_takes_out(raw: bytes) -> None:
    from denpex.logs.normalise import strip_ansi

    unansi = native.unansi()
    assert unansi is not None
    got = unansi(raw)
    assert got is not None
    assert got.decode().split("\n") == [strip_ansi(x.decode()) for x in raw.split(b"\n")]


@needs_loud
@pytest.mark.parametrize("raw", [b"a\x1b(Bb", b"t\x1b]0;title\x07", b"x\x1b[31", b"\x1b[ 1q", b"\xc2\x9b1m",
                                 b"y" * 65537 + b"\x1b[0m", b"\x1b[0m" + b"z" * 65536])
def test_unansi_gives_up_where_it_would_not_be_exact(raw: bytes) -> None:
    unansi = native.unansi()
    assert unansi is not None and unansi(raw) is None
