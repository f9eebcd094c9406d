"""The native key search with anchors (a key reported only where an anchor holding it is there), and
its SIMD levels (AVX-512BW, AVX2, one position at a time) giving the same answers."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from denpex.logs import native
from denpex.logs.diagnose import matcher_for
from denpex.logs.matcher import cover_keys

needs_native = pytest.mark.skipif(not native.available(), reason="native key search not built here (no compiler or AVX2)")


def _anchors() -> tuple[bytes, ...]:
    return tuple(a.encode() for a in matcher_for(None).anchors)


def _keys() -> tuple[bytes, ...]:
    return cover_keys(_anchors(), 8)


def _text(rng: random.Random, anchors: tuple[bytes, ...], keys: tuple[bytes, ...], size: int) -> bytes:
    """Lines with anchors, keys without their anchors (near misses), anchors cut short, and filler."""
    parts: list[bytes] = []
    filler = b"abcdeCUDA_ERROR NCCL:()[]0123 \t\r\x1b\xff\"',."
    while sum(map(len, parts)) < size:
        r = rng.random()
        if r < 0.06:
            parts.append(rng.choice(anchors))
        elif r < 0.16:
            parts.append(rng.choice(keys))
        elif r < 0.24:
            a = rng.choice(anchors)
            cut = rng.randrange(1, len(a))
            parts.append(a[:cut] if rng.random() < 0.5 else a[cut:])
        elif r < 0.32:
            parts.append(b"\n")
        else:
            parts.append(bytes(rng.choice(filler) for _ in range(rng.randrange(1, 12))))
    return b"".join(parts)


def _lines_with_anchor(data: bytes, anchors: tuple[bytes, ...]) -> set[int]:
    """Line numbers (0-based) of the lines holding an anchor."""
    return {i for i, line in enumerate(data.split(b"\n")) if any(a in line for a in anchors)}


@pytest.fixture
def levels() -> Iterator[list[int]]:
    """The SIMD levels this CPU has (0 always); the best one is put back after the test."""
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    best = _teddy.level()
    yield list(range(best + 1))
    _teddy.level(best)


@needs_native
@pytest.mark.parametrize("seed", range(30))
def test_with_anchors_a_line_is_reported_exactly_where_it_holds_an_anchor(seed: int, levels: list[int]) -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    rng = random.Random(seed)
    anchors, keys = _anchors(), _keys()
    s = native.searcher(keys, anchors=anchors)
    assert s is not None
    for _ in range(8):
        data = _text(rng, anchors, keys, rng.choice([0, 5, 63, 64, 67, 131, 700, 6000]))
        got = {}
        for lv in levels:
            _teddy.level(lv)
            got[lv] = s.scan(data)
        starts, before, total = got[levels[-1]]
        assert all(g == got[levels[-1]] for g in got.values())  # every level, the same answer
        assert total == data.count(b"\n")
        assert all(any(data.startswith(a, st) for a in anchors) for st in starts)  # anchor starts only
        assert {data.count(b"\n", 0, st) for st in starts} == _lines_with_anchor(data, anchors)
        assert before == [data.count(b"\n", 0, st) for st in starts]


@needs_native
@pytest.mark.parametrize("seed", range(20))
def test_every_simd_level_reports_every_key_start(seed: int, levels: list[int]) -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    rng = random.Random(500 + seed)
    anchors, keys = _anchors(), _keys()
    s = native.searcher(keys)
    assert s is not None
    for _ in range(8):
        data = _text(rng, anchors, keys, rng.choice([0, 3, 64, 65, 67, 68, 129, 4000]))
        want = set()
        for k in keys:
            i = data.find(k)
            while i >= 0:
                want.add(i)
                i = data.find(k, i + 1)
        for lv in levels:
            _teddy.level(lv)
            starts, before, total = s.scan(data)
            assert set(starts) == want and total == data.count(b"\n")
            assert before == [data.count(b"\n", 0, st) for st in starts]


@needs_native
def test_traceback_frames_of_other_files_are_not_reported_and_a_graphs_frame_is() -> None:
    s = matcher_for(None).native
    assert s is not None
    frame = b'[rank3]:   File "/workspace/train.py", line 88, in forward\n[rank3]:     return self.block(x)\n'
    data = frame * 5000
    starts, _before, total = s.scan(data)
    assert starts == [] and total == 10000
    graphs = b'[rank3]:   File "/opt/torch/cuda/graphs.py", line 126, in capture_end\n'
    starts, before, _total = s.scan(data + graphs)
    assert len(starts) == 1 and before == [10000]
    assert (data + graphs)[starts[0]:].startswith(b'graphs.py", line ')


@needs_native
def test_an_anchor_table_that_does_not_hold_its_key_is_refused() -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    keys = [b"abcdefgh", b"ijklmnop"]
    ok = [[(b"xxabcdefghyy", 2)], [(b"ijklmnop", 0)]]
    s = _teddy.Searcher(keys, [0, 0], [0, 1], ok)
    assert s.scan(b"-- xxabcdefghyy --\nabcdefgh\nijklmnop\n")[0] == [3, 28]
    for bad in ([[(b"xxabcdefghyy", 3)], [(b"ijklmnop", 0)]],  # the key is not at that offset
                [[(b"abcdefgh\nz", 0)], [(b"ijklmnop", 0)]],  # a newline
                [[(b"abcdefgh", 0)]],  # not one entry per key
                [[("abcdefgh", 0)], [(b"ijklmnop", 0)]]):  # not bytes
        with pytest.raises((ValueError, TypeError)):
            _teddy.Searcher(keys, [0, 0], [0, 1], bad)
    assert native.anchor_keys((b"abcdefgh",), (b"zzzz",)) is None  # an anchor with no key


def test_anchor_keys_put_each_anchor_under_one_key_it_holds_and_replace_common_ones() -> None:
    anchors, keys = _anchors(), _keys()
    got = native.anchor_keys(keys, anchors)
    assert got is not None
    chosen, table = got
    assert len(chosen) == len(table) and len(set(chosen)) == len(chosen)
    placed = [a for pairs in table for a, _off in pairs]
    assert sorted(placed) == sorted(set(anchors))  # every anchor once
    for k, pairs in zip(chosen, table, strict=True):
        assert pairs and all(a[off:off + len(k)] == k for a, off in pairs)
    assert all(native._share(k) <= native.COMMON or all(native._share(k) <= native._share(a[i:i + 8])
               for a, _o in pairs for i in range(len(a) - 7)) for k, pairs in zip(chosen, table, strict=True))
    assert b'.py", li' in keys and b'.py", li' not in chosen  # on every traceback frame: replaced
