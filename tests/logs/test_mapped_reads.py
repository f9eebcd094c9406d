"""A big file read through memory maps (logs.mapped) gives the answers of read() into buffers.

MappedChunk's bytes methods are checked against bytes on random spans; whole diagnoses (rules, first
error, ranges) on the suite's logs with maps forced on small files and windows smaller than a chunk,
against the same runs with maps off; and a scan keeps only a few windows of a big file mapped.
"""

from __future__ import annotations

import json
import mmap
import random
from pathlib import Path
from typing import Any

import pytest

from denpex.logs import first_error_ranges, mapped, scanner, summary
from denpex.logs.diagnose import matcher_for
from denpex.logs.layout import source_of
from denpex.logs.scanner import ScanStats, iter_line_hits
from tests.logs.test_first_error_quiet import _suite_logs


def _chunk(data: bytes, tmp_path: Path, base: int) -> mapped.MappedChunk:
    p = tmp_path / "data.bin"
    p.write_bytes(b"x" * base + data)
    with open(p, "rb") as fh:
        win = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return mapped.MappedChunk(win, memoryview(win), base, len(data))


@pytest.mark.parametrize("seed", range(6))
def test_a_mapped_chunk_answers_as_bytes(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    data = bytes(rng.choice(b"ab\n\x1b") for _ in range(rng.randrange(1, 3000)))
    c = _chunk(data, tmp_path, rng.randrange(0, 9000))
    n = len(data)
    assert len(c) == n and bool(c) and bytes(c) == data and bytes(c.view) == data
    for _ in range(300):
        a = rng.choice([None, rng.randrange(-n - 5, n + 5)])
        b = rng.choice([None, rng.randrange(-n - 5, n + 5)])
        sub = rng.choice([b"\n", b"a\n", b"ab", b"\x1b", b"zz", b""])
        assert c.find(sub, a, b) == data.find(sub, a, b), (sub, a, b)
        assert c.rfind(sub, a, b) == data.rfind(sub, a, b), (sub, a, b)
        assert c[a:b] == data[a:b]
        assert c.endswith(sub) == data.endswith(sub)
    assert c.find(b"\n") == data.find(b"\n") and c.rfind(b"\n") == data.rfind(b"\n")
    with pytest.raises(TypeError):
        c[0]  # type: ignore[index]  # an index, not a slice: what the scanner never asks


def _answer(path: Path, ranges: int = 1) -> Any:
    doc, _d = summary.summarise(source_of(path), None, 100, ranges=ranges, first_error=True)
    return json.loads(json.dumps(doc, default=str))


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Maps on every file, a window of one allocation unit: chunks start in every place of a window.
    The list counts the scans that were mapped."""
    monkeypatch.setattr(mapped, "MIN_BYTES", 0)
    monkeypatch.setattr(mapped, "WINDOW", mmap.ALLOCATIONGRANULARITY)
    count: list[int] = [0]
    real = mapped.mapped

    def counted(stream: Any) -> mapped.MappedFile | None:
        got = real(stream)
        count[0] += got is not None
        return got

    monkeypatch.setattr(scanner, "mapped", counted)
    return count


def test_maps_are_used_only_for_big_regular_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = tmp_path / "small.log"
    small.write_bytes(b"x\n" * 100)
    with open(small, "rb") as fh:
        monkeypatch.setenv("DENPEX_MMAP", "1")
        assert mapped.mapped(fh) is None  # under MIN_BYTES
        monkeypatch.delenv("DENPEX_MMAP")
    monkeypatch.setattr(mapped, "MIN_BYTES", 0)
    with open(small, "rb") as fh:
        assert mapped.mapped(fh) is None  # off unless asked for
        monkeypatch.setenv("DENPEX_MMAP", "1")
        assert mapped.mapped(fh) is not None  # the user's switch
    import io

    assert mapped.mapped(io.BytesIO(b"x\n" * 100)) is None  # not a file


@pytest.mark.parametrize("chunk", [1 << 20, 3000])
def test_mapped_reads_give_every_suite_log_s_diagnosis(chunk: int, forced: list[int],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "CHUNK", chunk)
    paths = _suite_logs()
    assert len(paths) > 100
    monkeypatch.delenv("DENPEX_MMAP", raising=False)
    want = [_answer(p) for p in paths]
    monkeypatch.setenv("DENPEX_MMAP", "1")
    assert forced[0] == 0
    got = [_answer(p) for p in paths]
    assert forced[0] > len(paths)  # the rule pass of each, and the first-error pass where no rule answers
    diff = [str(p) for p, w, g in zip(paths, want, got, strict=True) if w != g]
    assert not diff, diff[:5]
    assert sum(1 for w in want if w.get("verdict")) > 50  # the comparison covers real verdicts


def test_mapped_ranges_give_the_joined_log_s_diagnosis(forced: list[int], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A big file's ranges (the rule pass and the first-error pass), each a Bounded range of a map."""
    monkeypatch.setattr(scanner, "CHUNK", 4096)
    monkeypatch.setattr(first_error_ranges, "MIN_PART", 1)
    monkeypatch.setattr(summary, "MIN_RANGE", 1)
    paths = _suite_logs()
    rng = random.Random(7)
    for k in range(4):
        big = tmp_path / f"joined{k}.log"
        big.write_bytes(b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in rng.sample(paths, 25)))
        for parts in (1, 3):
            monkeypatch.delenv("DENPEX_MMAP", raising=False)
            want = _answer(big, parts)
            monkeypatch.setenv("DENPEX_MMAP", "1")
            before = forced[0]
            assert _answer(big, parts) == want, (k, parts)
            assert forced[0] >= before + parts


def _mappings_of(path: Path) -> int:
    return sum(1 for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(str(path)))


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="counts mappings in /proc")
def test_a_scan_keeps_a_few_windows_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENPEX_MMAP", "1")
    monkeypatch.setattr(mapped, "MIN_BYTES", 0)
    monkeypatch.setattr(mapped, "WINDOW", 64 * mmap.ALLOCATIONGRANULARITY)
    big = tmp_path / "big.log"
    line = b"[rank3]: step 1 | loss 2.0 | errors=0\n"
    big.write_bytes(line * (40 * 64 * mmap.ALLOCATIONGRANULARITY // len(line)))  # about 40 windows
    most = 0

    def progress(_n: int) -> None:
        nonlocal most
        most = max(most, _mappings_of(big))

    with open(big, "rb") as fh:
        lines = list(iter_line_hits(fh, matcher_for(None), ScanStats(), None, progress))
    assert lines == [] and most >= 1  # it was mapped
    assert most <= 3, most  # the window being read, the one before it (the previous chunk) and no more


def test_a_file_cut_shorter_while_read_ends_where_it_was_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """logrotate's copytruncate: the size is checked before each new window, so no read runs past the cut."""
    monkeypatch.setenv("DENPEX_MMAP", "1")
    monkeypatch.setattr(mapped, "MIN_BYTES", 0)
    monkeypatch.setattr(mapped, "WINDOW", mmap.ALLOCATIONGRANULARITY)
    p = tmp_path / "live.log"
    p.write_bytes(b"y" * (10 * mmap.ALLOCATIONGRANULARITY))
    with open(p, "rb") as fh:
        m = mapped.mapped(fh)
        assert m is not None
        first = m.read(mmap.ALLOCATIONGRANULARITY)
        assert len(first) == mmap.ALLOCATIONGRANULARITY
        with open(p, "r+b") as w:
            w.truncate(3 * mmap.ALLOCATIONGRANULARITY + 5)
        got = [len(first)]
        while chunk := m.read(mmap.ALLOCATIONGRANULARITY):
            got.append(len(chunk))
            assert bytes(chunk) == b"y" * len(chunk)
    assert sum(got) == 3 * mmap.ALLOCATIONGRANULARITY + 5
