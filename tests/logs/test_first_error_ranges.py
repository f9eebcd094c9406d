"""The first-error pass over a big file's ranges (first_error_ranges) gives the answer of one pass.

The ranges start where one pass's chunks start (checked against the scanner's own reads), each with the
chunk before it in its window; joined in file order, or read again in one pass where a range ended with
a traceback open or a record waiting. Checked with small chunks and ranges on the suite's logs joined
into bigger files, on generated logs whose tracebacks and waiting records straddle the cuts, and
through summarise() with forked workers as `denpex diagnose FILE` runs a big file.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from denpex.logs import first_error, first_error_ranges, scanner, summary
from denpex.logs.diagnose import matcher_for
from denpex.logs.layout import source_of
from denpex.logs.parallel import ForkPool, init_worker
from denpex.logs.scanner import ScanStats, iter_line_hits
from tests.conftest import DATA
from tests.logs.test_first_error_quiet import _generated, _suite_logs


class _Now:
    """A handle whose work ran at once (the pool's place in a test)."""

    def __init__(self, part: first_error_ranges.Part) -> None:
        self.part = part

    def result(self) -> first_error_ranges.Part:
        return self.part


def _one_pass(path: Path) -> Any:
    with open(path, "rb") as fh:
        fe = first_error.scan(fh, matcher_for(None))
    return fe.to_json() if fe is not None else None


def _ranged(path: Path, parts: int) -> Any:
    matcher = matcher_for(None)

    def call(prev: int, start: int, end: int, last: bool) -> _Now:
        return _Now(first_error_ranges.scan_part(str(path), prev, start, end, last, matcher, None, 100))

    fe = first_error_ranges.scan_ranges(str(path), matcher, None, 100, parts, call)
    return fe.to_json() if fe is not None else None


class _Reads:
    """A file that records where each read starts."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh
        self.at: list[int] = []

    def readinto(self, b: Any) -> int:
        self.at.append(self.fh.tell())
        n: int = self.fh.readinto(b)
        return n

    def seekable(self) -> bool:
        return True

    def seek(self, off: int, whence: int = 0) -> int:
        return int(self.fh.seek(off, whence))


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "CHUNK", 4096)
    monkeypatch.setattr(first_error_ranges, "MIN_PART", 1)


def _joined(tmp_path: Path, paths: list[Path], name: str) -> Path:
    out = tmp_path / name
    out.write_bytes(b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in paths))
    return out


def test_ranges_start_where_one_pass_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "CHUNK", 65536)
    rng = random.Random(3)
    data = bytearray(_generated(rng, 4000) * 4)
    for at in (60000, 200000):
        data[at:at] = b"x" * 9000 + b"\n"  # lines longer than the first look-back window (4 KiB)
    path = tmp_path / "x.log"
    path.write_bytes(bytes(data))
    rec = _Reads(open(path, "rb"))  # noqa: SIM115 - closed below
    try:
        for _lh in iter_line_hits(rec, matcher_for(None), ScanStats()):  # type: ignore[arg-type]
            pass
    finally:
        rec.fh.close()
    starts = first_error_ranges.chunk_starts(str(path))
    assert starts is not None and len(starts) > 10 and rec.at[: len(starts)] == starts


def test_a_line_longer_than_a_chunk_gives_one_pass(small: None, tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    path.write_bytes(b"a" * 10000 + b"\nValueError: x\n" + b"b\n" * 5000)
    assert first_error_ranges.chunk_starts(str(path)) is None
    assert first_error_ranges.plan(str(path), 4) == [(0, 0, path.stat().st_size, True)]
    assert _ranged(path, 4) == _one_pass(path)


@pytest.mark.parametrize("parts", [2, 3, 7])
def test_ranges_give_one_pass_s_answer_on_the_suite_logs(parts: int, small: None, tmp_path: Path) -> None:
    logs = _suite_logs()
    rng = random.Random(parts)
    for i in range(12):  # bigger files: several of the suite's logs end to end
        picked = rng.sample(logs, 6)
        path = _joined(tmp_path, picked, f"j{i}.log")
        assert _ranged(path, parts) == _one_pass(path), [p.name for p in picked]
    for p in logs:
        assert _ranged(p, parts) == _one_pass(p), p


@pytest.mark.parametrize("seed", range(16))
def test_ranges_give_one_pass_s_answer_on_generated_logs(seed: int, small: None, tmp_path: Path) -> None:
    rng = random.Random(100 + seed)
    quiet = b"[rank1]:[2026-11-30 00:41:07,000][llm.train][INFO] - step 1 | errors=0 | 0 failed\n"
    data = quiet * rng.randrange(0, 3000) + _generated(rng, rng.randrange(50, 3000)) + quiet * rng.randrange(0, 500)
    path = tmp_path / "g.log"
    path.write_bytes(data)
    for parts in (2, 5):
        assert _ranged(path, parts) == _one_pass(path)


def test_an_open_traceback_at_a_cut_reads_in_one_pass(small: None, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = b"[2026-11-30 00:41:07,000][llm.train][INFO] - step 1 | errors=0 | 0 failed\n"
    tb = b"Traceback (most recent call last):\n" + b'  File "/w/t.py", line 3, in f\n    f()\n' * 200
    path = tmp_path / "t.log"
    path.write_bytes(quiet * 300 + tb + b"torch._dynamo.exc.Unsupported: boom\n" + quiet * 300)
    ones = []
    real = first_error_ranges.scan

    def counting(*args: Any) -> Any:
        ones.append(1)
        return real(*args)

    monkeypatch.setattr(first_error_ranges, "scan", counting)
    got = _ranged(path, 2)
    assert got == _one_pass(path) and got is not None and got["text"].startswith("torch._dynamo")
    cut = first_error_ranges.plan(str(path), 2)[1][1]
    assert len(quiet) * 300 < cut < len(quiet) * 300 + len(tb)  # the cut falls in the traceback
    assert ones == [1]


def test_summarise_big_file_with_forked_workers(small: None, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary, "MIN_RANGE", 1)
    init_worker([], 100)
    quiet = b"[rank1]:[2026-11-30 00:41:07,000][llm.train][INFO] - step 1 | errors=0 | 0 failed\n"
    tgi = (DATA / "first_error" / "tgi_flash_attention_notimplemented.log").read_bytes()
    record = (b"E1201 08:15:03.123 574 worker.cc:12] lost the worker: see below\n"
              b"Traceback (most recent call last):\n  File \"/w/t.py\", line 3, in f\n    f()\n"
              b"torch._dynamo.exc.Unsupported: boom\n")
    for i, (before, tail, after) in enumerate(((4000, tgi, 2000), (3000, record, 3000), (6000, quiet, 10),
                                               (5990, record, 20))):
        path = tmp_path / f"big{i}.log"
        path.write_bytes(quiet * before + tail + quiet * after)
        src = source_of(path)
        _s, one = summary.summarise(src, None, 100, first_error=True)
        _s, many = summary.summarise(src, None, 100, ranges=2, pool=ForkPool(None), first_error=True)
        assert one.verdict is None
        assert many.to_json() == one.to_json(), i
        assert (one.first_error is None) == (tail == quiet), i


_QUIET = b"[rank1]:[2026-11-30 00:41:07,000][llm.train][INFO] - step 1 | errors=0 | 0 failed\n"
_PLAIN = b"[rank1]:[2026-11-30 00:41:07,000][llm.train][INFO] - step 1 | loss 2.3456 | lr 3.0e-04\n"  # no key
_EVENTS = (
    # a handled traceback whose last line is collateral: it stays open until the next line with a key
    b"[rank0]:Traceback (most recent call last):\n[rank0]:  File \"/w/ckpt.py\", line 88, in upload\n"
    b"[rank0]:    put()\n[rank0]:ConnectionResetError: [Errno 104] Connection reset by peer\n",
    # an error record waiting for its event (an answer once its span has passed)
    b"E1201 08:15:03.123 574 worker.cc:12] lost the worker\n",
    b"[rank2]:[2026-11-30 00:41:07,000][llm.train][ERROR] - shard upload failed:\n",
    b"[rank3]:torch._dynamo.exc.Unsupported: raised:\n",
    b"[rank1]:NCCL watchdog timeout\n",
    b"[rank1]:Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3) ran for 600091 ms\n",
)


@pytest.mark.parametrize("seed", range(40))
def test_what_one_pass_carries_over_a_cut(seed: int, small: None, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracebacks left open and records left waiting where a range ends: settled by the next range's
    first line (far enough on) or read again in one pass; the answer is one pass's either way."""
    rng = random.Random(seed)
    out = [_QUIET * rng.randrange(0, 3000)]
    for _ in range(rng.randrange(1, 6)):
        out.append(rng.choice(_EVENTS))
        out.append(rng.choice((_QUIET, _PLAIN)) * rng.choice((0, 1, 5, 150, 250, 1900, 2100, 4000)))
    path = tmp_path / "c.log"
    path.write_bytes(b"".join(out))
    agains: list[int] = []
    real = first_error_ranges.scan

    def counting(*args: Any) -> Any:
        agains.append(1)
        return real(*args)

    monkeypatch.setattr(first_error_ranges, "scan", counting)
    for parts in (2, 3, 4, 6):
        assert _ranged(path, parts) == _one_pass(path), parts
    _CARRIED[seed] = len(agains)


_CARRIED: dict[int, int] = {}


def test_some_cuts_carried_something_and_some_were_read_again() -> None:
    """The draws above reach both ends of join(): read again in one pass, and settled without it."""
    if len(_CARRIED) < 40:
        pytest.skip("runs after the draws")
    assert 0 < sum(1 for n in _CARRIED.values() if n) < len(_CARRIED)


def test_summarise_big_file_with_an_executor(small: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where fork is missing, the ranges run in the executor's workers (RangePool.call)."""
    from denpex.logs.parallel import RangePool, _executor

    monkeypatch.setattr(summary, "MIN_RANGE", 1)
    init_worker([], 100)
    quiet = b"[rank1]:[2026-11-30 00:41:07,000][llm.train][INFO] - step 1 | errors=0 | 0 failed\n"
    tgi = (DATA / "first_error" / "tgi_flash_attention_notimplemented.log").read_bytes()
    path = tmp_path / "big.log"
    path.write_bytes(quiet * 5000 + tgi + quiet * 100)
    src = source_of(path)
    _s, one = summary.summarise(src, None, 100, first_error=True)
    with _executor(1, [], 100) as ex:
        _s, many = summary.summarise(src, None, 100, ranges=2, pool=RangePool(ex, None), first_error=True)
    assert one.first_error is not None and many.to_json() == one.to_json()


def test_the_first_error_pass_reads_fixed_chunks_where_the_rule_scan_grows_them(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines of a third of a chunk (progress bars redrawn with CRs) make the rule scan's reads grow; the
    first-error pass keeps the chunk size, so its ranges still start where its one pass reads."""
    monkeypatch.setattr(scanner, "CHUNK", 65536)
    monkeypatch.setattr(scanner, "MAX_READ", 1 << 20)
    rng = random.Random(4)
    parts = []
    for _ in range(400):
        parts.append(b"\r".join(b"Epoch 1 %d%%|####| loss=%d" % (k, rng.randrange(9)) for k in range(rng.randrange(200, 1400))))
        parts.append(b"\n[rank1]:[2026-11-30 00:41:07,000][llm.train][INFO] - step 1 | errors=0 | 0 failed\n")
    parts.append(_generated(rng, 400))  # the answer near the end: the pass reads the whole file
    path = tmp_path / "bars.log"
    path.write_bytes(b"".join(parts))
    starts = first_error_ranges.chunk_starts(str(path))
    assert starts is not None
    for grows in (True, False):
        rec = _Reads(open(path, "rb"))  # noqa: SIM115 - closed below
        try:
            if grows:
                for _lh in iter_line_hits(rec, matcher_for(None), ScanStats()):  # type: ignore[arg-type]
                    pass
            else:
                first_error.scan(rec, matcher_for(None))  # type: ignore[arg-type]
        finally:
            rec.fh.close()
        assert len(rec.at) > 10 and (rec.at == starts[: len(rec.at)]) is not grows
        gaps = [b - a for a, b in itertools.pairwise(rec.at)]
        assert (max(gaps) > 65536) is grows  # the rule scan's reads grew, the pass's did not
    monkeypatch.setattr(first_error_ranges, "MIN_PART", 1)
    for n in (2, 3):
        assert _ranged(path, n) == _one_pass(path)
