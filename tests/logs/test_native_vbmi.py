"""The native search's byte-lookup level (AVX-512 VBMI, level 3): a fingerprint byte is looked up by its low
7 bits, so a byte >= 0x80 and its ASCII twin (the same low 7 bits) share a table entry. Every key start is
still reported, no start that is not a key's, and the same answer at every level the CPU has."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from denpex.logs import native

needs_native = pytest.mark.skipif(not native.available(), reason="native key search not built here (no compiler or AVX2)")

# keys with bytes above 0x7f (UTF-8 text) and ASCII keys whose bytes are their low-7-bit twins
KEYS = ("Fehler: ungültig".encode(), b"Fehler: ung\x43\x3Cltig", "错误：非法内存访问".encode(), b"CUDA error: ",
        b"illegal memory", "ошибка CUDA".encode(), b"\xc3\xbcber\xff\xfe", b"Cber\x7f\x7e")


@pytest.fixture
def levels() -> Iterator[list[int]]:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    best = _teddy.level()
    yield list(range(best + 1))
    _teddy.level(best)


def _twin(b: bytes) -> bytes:
    """The bytes with the high bit of each flipped: the same low 7 bits, another byte."""
    return bytes(c ^ 0x80 for c in b)


def _text(rng: random.Random, size: int) -> bytes:
    parts: list[bytes] = []
    while sum(map(len, parts)) < size:
        r = rng.random()
        k = rng.choice(KEYS)
        if r < 0.1:
            parts.append(k)
        elif r < 0.35:  # a near miss: the key with some bytes swapped for their twins
            parts.append(bytes(c ^ 0x80 if rng.random() < 0.3 else c for c in k))
        elif r < 0.45:
            parts.append(_twin(k))
        elif r < 0.55:
            parts.append(b"\n")
        else:
            parts.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))))
    return b"".join(parts)


def _starts(data: bytes) -> set[int]:
    want = set()
    for k in KEYS:
        i = data.find(k)
        while i >= 0:
            want.add(i)
            i = data.find(k, i + 1)
    return want


@needs_native
@pytest.mark.parametrize("seed", range(25))
def test_every_level_reports_exactly_the_key_starts_where_bytes_alias(seed: int, levels: list[int]) -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    s = native.searcher(KEYS, role="test-vbmi")
    assert s is not None
    rng = random.Random(900 + seed)
    for _ in range(6):
        data = _text(rng, rng.choice([0, 63, 64, 67, 128, 131, 1000, 9000]))
        got = {}
        for lv in levels:
            _teddy.level(lv)
            got[lv] = s.scan(data)
        starts, before, total = got[levels[-1]]
        assert all(g == got[levels[-1]] for g in got.values())
        assert set(starts) == _starts(data) and total == data.count(b"\n")
        assert before == [data.count(b"\n", 0, st) for st in starts]


@needs_native
def test_the_twins_of_a_key_alone_give_no_start(levels: list[int]) -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    s = native.searcher(KEYS, role="test-vbmi")
    assert s is not None
    data = b"\n".join(_twin(k) for k in KEYS if _twin(k) not in KEYS) * 40
    assert not _starts(data)
    for lv in levels:
        _teddy.level(lv)
        assert s.scan(data) == ([], [], data.count(b"\n"))
    data2 = data + KEYS[0] + b"\n"
    for lv in levels:
        _teddy.level(lv)
        starts, before, _t = s.scan(data2)
        assert starts == [len(data)] and before == [data.count(b"\n")]
