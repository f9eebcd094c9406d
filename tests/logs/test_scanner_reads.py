"""The scanner's reads grow where lines are long, and the lines it reports stay those of fixed reads."""

from __future__ import annotations

import io
import random
from typing import Any

import pytest

from denpex.logs import scanner
from denpex.logs.diagnose import matcher_for
from denpex.logs.scanner import ScanStats, iter_line_hits


class _Counted(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads: list[int] = []

    def readinto(self, b: Any) -> int:
        n = super().readinto(b)
        self.reads.append(n)
        return n


def _scan(data: bytes) -> tuple[list[tuple[int, str]], ScanStats, list[int]]:
    stream = _Counted(data)
    stats = ScanStats()
    got = [(lh.line, lh.text) for lh in iter_line_hits(stream, matcher_for(None), stats)]  # type: ignore[arg-type]
    return got, stats, stream.reads


def _bars(rng: random.Random, n: int) -> bytes:
    out = []
    for i in range(n):
        bar = b"\r".join(b"\x1b[35m%3d%%\x1b[0m loss=%d" % (k % 100, rng.randrange(9)) for k in range(rng.randrange(100, 900)))
        out.append(bar + b"\n")
        if i % 7 == 3:
            out.append(b"[rank1]:torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n")
        out.append(b"[rank0]: step %d | errors=0\n" % i)
    return b"".join(out)


@pytest.mark.parametrize("seed", range(4))
def test_long_lines_grow_the_reads_and_give_the_lines_of_one_big_read(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _bars(random.Random(seed), 300)
    monkeypatch.setattr(scanner, "CHUNK", 1 << 26)  # one read holds it all
    want, want_stats, _reads = _scan(data)
    monkeypatch.setattr(scanner, "CHUNK", 16384)
    monkeypatch.setattr(scanner, "MAX_READ", 1 << 18)
    got, stats, reads = _scan(data)
    assert got == want and len(want) >= 40
    assert (stats.lines, stats.bytes, stats.candidates) == (want_stats.lines, want_stats.bytes, want_stats.candidates)
    assert 16384 < max(reads) <= 1 << 18  # grew, up to MAX_READ at most
    assert sum(reads) < len(data) * 1.15  # little read twice (fixed 16 KiB reads: about twice the file)


def test_short_lines_keep_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "CHUNK", 4096)
    data = b"[rank0]: step 1 | errors=0\n" * 5000
    _got, _stats, reads = _scan(data)
    assert max(reads) == 4096
