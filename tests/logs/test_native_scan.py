"""The native one-pass key search (denpex.logs._teddy) gives the answers of the crate's passes.

Where the module was built (an x86-64 machine with a C compiler at install), each check runs the
C searcher against a plain Python reference or against the matcher without it; elsewhere they skip,
except the build check, which fails where a compiler exists but no working module came of it.
"""

from __future__ import annotations

import random
import shlex
import shutil
import sysconfig
from pathlib import Path

import pytest

from denpex.logs import native
from denpex.logs.diagnose import matcher_for
from denpex.logs.matcher import Matcher, cover_keys
from denpex.logs.scanner import ScanStats, iter_line_hits
from denpex.rulebook import load_rulebook

DATA = Path(__file__).resolve().parent.parent / "data"
needs_native = pytest.mark.skipif(not native.available(), reason="native key search not built here (no compiler or AVX2)")


def _keys() -> tuple[bytes, ...]:
    return cover_keys(tuple(a.encode() for a in matcher_for(None).anchors), 8)


def _searcher() -> native.Searcher:
    got = native.searcher(_keys())
    assert got is not None
    return got


def test_native_search_is_built_where_a_compiler_and_avx2_exist() -> None:
    import platform

    link = shlex.split(sysconfig.get_config_var("LDSHARED") or "cc -shared")
    if platform.machine().lower() not in ("x86_64", "amd64") or shutil.which(link[0]) is None:
        pytest.skip("no C compiler or not x86-64: the wheel is pure Python here")
    try:
        from denpex.logs import _teddy  # type: ignore[attr-defined]
    except ImportError:
        pytest.fail("a compiler exists but denpex.logs._teddy was not built (see hatch_build.py)")
    cpu = Path("/proc/cpuinfo")
    if cpu.is_file() and " avx2" in cpu.read_text():
        assert _teddy.simd() and native.available()


def _text(rng: random.Random, keys: tuple[bytes, ...], size: int) -> bytes:
    parts: list[bytes] = []
    filler = b"abcdeCUDA_ERROR NCCL:()[]0123 \t\r\x1b\xff"
    while sum(map(len, parts)) < size:
        r = rng.random()
        if r < 0.12:
            parts.append(rng.choice(keys))
        elif r < 0.2:
            parts.append(b"\n")
        elif r < 0.3:
            k = rng.choice(keys)
            cut = rng.randrange(1, len(k))
            parts.append(k[:cut] if rng.random() < 0.5 else k[cut:])  # near misses
        else:
            parts.append(bytes(rng.choice(filler) for _ in range(rng.randrange(1, 12))))
    return b"".join(parts)


def _every_start(data: bytes, keys: tuple[bytes, ...]) -> set[int]:
    out: set[int] = set()
    for k in keys:
        i = data.find(k)
        while i >= 0:
            out.add(i)
            i = data.find(k, i + 1)
    return out


@needs_native
@pytest.mark.parametrize("seed", range(40))
def test_native_scan_reports_every_key_start_and_the_newlines_before_it(seed: int) -> None:
    rng = random.Random(seed)
    keys = _keys()
    s = _searcher()
    for _ in range(25):
        data = _text(rng, keys, rng.choice([0, 3, 31, 35, 36, 67, 300, 5000]))
        starts, before, total = s.scan(data)
        assert set(starts) == _every_start(data, keys)
        assert total == data.count(b"\n")
        assert all(n == data.count(b"\n", 0, st) for st, n in zip(starts, before, strict=True))
        limit = rng.randrange(0, len(data) + 1)
        starts, _before, total = s.scan(bytearray(data), limit)  # a pooled buffer, partly filled
        assert set(starts) == _every_start(data[:limit], keys) and total == data[:limit].count(b"\n")


@needs_native
@pytest.mark.parametrize("seed", range(20))
def test_scan_chunk_with_and_without_native_search_gives_the_same_offsets(seed: int) -> None:
    rng = random.Random(1000 + seed)
    book = load_rulebook()
    with_native = Matcher(book)
    plain = Matcher(book)
    plain.native = None
    anchors = [a.encode() for a in with_native.anchors]
    assert with_native.native is not None
    for _ in range(10):
        lines = []
        for _n in range(rng.randrange(1, 60)):
            bits = [_text(rng, tuple(anchors), rng.randrange(0, 80)).replace(b"\n", b" ")]
            if rng.random() < 0.4:
                bits.insert(rng.randrange(2), rng.choice(anchors))
            lines.append(b" ".join(bits))
        data = b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")
        got, before, total = with_native.scan_chunk(data)
        want, none, none2 = plain.scan_chunk(data)
        assert none is None and none2 is None
        assert got == want
        assert before is not None and total == data.count(b"\n")
        assert before == [data.count(b"\n", 0, off) for off in got]


@needs_native
def test_every_log_in_the_suite_scans_to_the_same_hits_with_and_without_native_search() -> None:
    book = load_rulebook()
    with_native = Matcher(book)
    plain = Matcher(book)
    plain.native = None
    logs = sorted(p for p in DATA.rglob("*") if p.is_file() and p.suffix in (".log", ".txt", ".out"))
    assert len(logs) > 40
    for p in logs:
        runs = []
        for m in (with_native, plain):
            stats = ScanStats()
            with open(p, "rb") as fh:
                hits = [(lh.line, lh.text, [(h.signature.rule_id, h.start) for h in lh.hits], lh.offset)
                        for lh in iter_line_hits(fh, m, stats)]
            runs.append((hits, stats.lines, stats.bytes, stats.candidates))
        assert runs[0] == runs[1], p


@needs_native
def test_searcher_rejects_keys_it_cannot_search_with_one_line() -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    for keys, offsets, buckets, kind in (
        ([b"abc"], [0], [0], ValueError),  # shorter than a fingerprint
        ([b"abcdef"], [3], [0], ValueError),  # fingerprint past the end
        ([b"ab\ncdef"], [0], [0], ValueError),  # a newline: lines are the unit
        ([b"abcdef"], [0], [32], ValueError),  # no such bucket
        (["abcdef"], [0], [0], TypeError),
        ([], [], [], ValueError),
    ):
        with pytest.raises(kind):
            _teddy.Searcher(keys, offsets, buckets)
    with pytest.raises(TypeError):
        _teddy.Searcher.__new__(_teddy.Searcher).scan(b"x")  # never initialised


def test_plan_gives_each_key_a_fingerprint_inside_it_and_a_bucket() -> None:
    keys = _keys()
    offsets, buckets = native.plan(keys)
    assert len(offsets) == len(buckets) == len(keys)
    assert all(0 <= o <= len(k) - native.FINGERPRINT for k, o in zip(keys, offsets, strict=True))
    assert set(buckets) <= set(range(native.BUCKETS)) and len(set(buckets)) == native.BUCKETS
    assert native.plan(keys) == (offsets, buckets)  # the cache may keep it: it must not depend on chance


def test_native_search_is_off_when_asked_or_when_a_key_is_too_short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, "0")
    native._module.cache_clear()
    try:
        assert native.searcher(_keys()) is None and not native.available()
    finally:
        monkeypatch.delenv(native.ENV)
        native._module.cache_clear()
    assert native.searcher((b"SIGBUS", b"abc")) is None  # "abc" has no 4-byte fingerprint


@needs_native
def test_a_searcher_whose_init_failed_can_be_initialised_again_and_only_once() -> None:
    from denpex.logs import _teddy  # type: ignore[attr-defined]

    s = _teddy.Searcher.__new__(_teddy.Searcher)
    with pytest.raises(ValueError):
        s.__init__([b"SIGBUS", b"ab"], [0, 0], [0, 1])
    s.__init__([b"SIGBUS", b"SIGSEGV"], [0, 1], [0, 1])
    assert s.scan(b"x SIGSEGV\nSIGBUS") == ([2, 10], [0, 1], 1)
    with pytest.raises(TypeError):
        s.__init__([b"SIGBUS"], [0], [0])


@needs_native
def test_a_cached_plan_out_of_range_is_planned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from denpex.rulebook import cache

    keys = _keys()
    monkeypatch.setattr(cache, "cached", lambda *_a, **_k: ([0] * len(keys), [99] * len(keys)))
    s = native.searcher(keys)
    assert s is not None
    data = b"x\n" + b"\n".join(keys) + b"\n"
    starts, _before, total = s.scan(data)
    assert set(starts) == _every_start(data, keys) and total == data.count(b"\n")
