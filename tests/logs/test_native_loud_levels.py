"""native.loud at every SIMD level the CPU has (one position at a time, AVX2, AVX-512): the same first
loud offset, on random bytes dense in what loud looks for (level words, glog letters, brackets, colour
codes, error codes) and cut at every block edge; and unansi into a caller's buffer as into its own."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from denpex.logs import native

needs_loud = pytest.mark.skipif(native.loud() is None or native.unansi() is None,
                                reason="native key search (with loud and unansi) not built here")

PIECES = (b"ERROR", b"ERRORS", b"FATAL", b"CRITICAL", b"E1201 ", b"[E:", b"F ", b"x E 2024-", b"E file.cc:12]",
          b"error 12", b"Error: code=7", b"eRRor", b"(12)", b"(1)", b"[0m", b"[1;31m", b"[K", b"\x1b", b"\x7f",
          b"\xc2\x9b", b"\xc2\xa0", b"\x01", b"\t", b"\r", b"[2026-11-30", b"rank[3]", b"EA", b"CR", b"FR")
FILLER = b"abcdefghijklmnop qrstuvwxyz0123456789 ._-:/|=,"


@pytest.fixture
def levels() -> Iterator[list[int]]:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    best = _teddy.level()
    yield list(range(best + 1))
    _teddy.level(best)


def _text(rng: random.Random, size: int, loud_share: float) -> bytes:
    parts: list[bytes] = []
    while sum(map(len, parts)) < size:
        if rng.random() < loud_share:
            parts.append(rng.choice(PIECES))
        else:
            parts.append(bytes(rng.choice(FILLER) for _ in range(rng.randrange(1, 40))))
        if rng.random() < 0.1:
            parts.append(b"\n")
    return b"".join(parts)[:size]


@needs_loud
@pytest.mark.parametrize("seed", range(40))
def test_every_level_gives_the_same_first_loud_offset(seed: int, levels: list[int]) -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    rng = random.Random(4000 + seed)
    share = rng.choice([0.0, 0.002, 0.02, 0.2])
    for _ in range(10):
        data = _text(rng, rng.choice([0, 3, 31, 36, 64, 67, 68, 131, 700, 5000]), share)
        got = {}
        for lv in levels:
            _teddy.level(lv)
            got[lv] = [_teddy.loud(data), *(_teddy.loud(data, cut) for cut in (1, 35, 64, 67, 100))]
        assert all(g == got[0] for g in got.values()), (data, got)


@needs_loud
def test_loud_finds_a_level_word_past_every_block_edge(levels: list[int]) -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    for lv in levels:
        _teddy.level(lv)
        for at in range(0, 200):
            data = b"z" * at + b" ERROR " + b"z" * 70
            assert _teddy.loud(data) == at + 1
            data = b"y" * at + b"xerror 12 " + b"y" * 70
            assert _teddy.loud(data) == at + 1
        assert _teddy.loud(b"z" * 5000) == -1


@needs_loud
@pytest.mark.parametrize("raw", [b"", b"plain\n", b"a\x1b[31mred\x1b[0m b\n" * 50, b"osc \x1b]0;t\x07\n", b"\x1b[1;3"])
def test_unansi_into_a_buffer_gives_its_own_answer(raw: bytes) -> None:
    unansi = native.unansi()
    assert unansi is not None
    own = unansi(raw)
    out = bytearray(len(raw) + 3)
    n = unansi(raw, out)
    if own is None:
        assert n is None
    else:
        assert n == len(own) and bytes(out[:n]) == own
    if raw:
        with pytest.raises(ValueError):
            unansi(raw, bytearray(len(raw) - 1))


@needs_loud
@pytest.mark.parametrize("k", [65535, 65536, 65537, 70000])
def test_unansi_refuses_a_line_over_64_kib_at_every_level(k: int, levels: list[int]) -> None:
    """A line over 65,536 bytes (read by the scanner in windows) makes unansi answer None, wherever the line
    starts and ends against the 64-byte blocks; one of 65,536 or less is cleaned."""
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    for lv in levels:
        _teddy.level(lv)
        for pre in (b"", b"a\n", b"x" * 63 + b"\n", b"\x1b[0m" * 30 + b"\n"):
            for post in (b"", b"\n", b"\nb", b"\n" + b"z" * 100):
                raw = pre + b"y" * k + post
                want = None if k > 65536 else raw.replace(b"\x1b[0m", b"")
                assert _teddy.unansi(raw) == want, (lv, len(pre), post[:2])
