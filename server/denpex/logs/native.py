"""The one-pass native key search (denpex.logs._teddy), where it was built and the CPU has AVX2.

The prefilter's keys (matcher.cover_keys) take two passes of the aho-corasick crate and a third
for the newline count; the C searcher does the three in one pass over each chunk (0.37 s against
0.54 s per GiB with the read, one core, same run). Its inputs are chosen here: each key's
fingerprint is the 4 of its bytes rarest in log text (log_ngrams.json), and keys go into 24
buckets so that those sharing a bucket add few false candidates (a byte-frequency model).

Without the module (no compiler at install, another CPU, DENPEX_NATIVE=0) searcher() returns None
and the matcher keeps the crate's passes: the answers are the same either way (tests compare them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, Protocol

BUCKETS = 24  # 3 sets of 8: on two logs 8 gave 26 times the false candidates of 24, 32 was slower
FINGERPRINT = 4
MAX_KEYS = 511
ENV = "DENPEX_NATIVE"  # "0" turns the native search off


class Searcher(Protocol):
    def scan(self, data: Any, length: int = -1, /) -> tuple[list[int], list[int], int]: ...


@cache
def _module() -> Any | None:
    if os.environ.get(ENV, "1") == "0":
        return None
    try:
        from denpex.logs import _teddy  # type: ignore[attr-defined]
    except ImportError:
        return None
    # one position at a time the C loop is slower than the crate's SIMD passes: not worth it
    return _teddy if _teddy.simd() else None


def available() -> bool:
    return _module() is not None


def loud() -> Callable[..., int] | None:
    """_teddy.loud(buffer[, length]): the offset of the first byte where a line may hold a first-error
    candidate that no literal key shows, or -1 (see logs.first_error); None where the module lacks it."""
    mod = _module()
    fn = getattr(mod, "loud", None) if mod is not None else None
    return fn if callable(fn) else None


def unansi() -> Callable[..., Any] | None:
    """_teddy.unansi(buffer): its bytes without CSI and two-byte ESC sequences, as normalise's cleaning
    takes them out of each line, or None where that is not exact; None where the module lacks it."""
    mod = _module()
    fn = getattr(mod, "unansi", None) if mod is not None else None
    return fn if callable(fn) else None


@cache
def _tables() -> tuple[list[float], dict[bytes, float]]:
    doc = json.loads((Path(__file__).with_name("log_ngrams.json")).read_text(encoding="utf-8"))
    grams = {g.encode("latin-1"): float(n) for g, n in doc["grams"].items()}
    return [float(x) for x in doc["bytes"]], grams


def plan(keys: tuple[bytes, ...]) -> tuple[list[int], list[int]]:
    """Each key's fingerprint offset and bucket.

    Offset: the 4-byte window least frequent in log text (ties: the later one, further from a
    common word start). Buckets: keys placed one by one, most selective fingerprint last, where
    they raise the bucket's chance of a false candidate least; that chance, per fingerprint byte,
    is the share of log bytes whose low and high nibble both pass the bucket's masks.
    """
    byte_freq, grams = _tables()
    total = sum(byte_freq) or 1.0
    share = [f / total + 1e-6 for f in byte_freq]
    def rarest(k: bytes) -> int:
        return max(range(len(k) - FINGERPRINT + 1), key=lambda o: (-grams.get(k[o:o + FINGERPRINT], 0.0), o))

    offsets = [rarest(k) for k in keys]
    prints = [k[o:o + FINGERPRINT] for k, o in zip(keys, offsets, strict=True)]

    def chance(members: list[bytes]) -> float:
        p = 1.0
        for j in range(FINGERPRINT):
            lows = {m[j] & 15 for m in members}
            highs = {m[j] >> 4 for m in members}
            p *= sum(share[(h << 4) | lo] for h in highs for lo in lows)
        return p

    members: list[list[bytes]] = [[] for _ in range(BUCKETS)]
    buckets = [0] * len(keys)
    for i in sorted(range(len(keys)), key=lambda i: (-chance([prints[i]]), prints[i])):
        costs = [chance([*m, prints[i]]) - (chance(m) if m else 0.0) for m in members]
        best = min(range(BUCKETS), key=costs.__getitem__)
        members[best].append(prints[i])
        buckets[i] = best
    return offsets, buckets


def searcher(keys: tuple[bytes, ...], role: str = "rules",
             anchors: tuple[bytes, ...] | None = None) -> Searcher | None:
    """A native searcher for these keys, or None where there is none (or the keys do not suit it).

    `role` names the key set's cache entry: an entry replaces its install's older one of the same
    name, so key sets used in one run (the rule book's, the first-error pass's two) need a name each
    (under one name they replaced each other, and a log with no verdict planned all three, about
    0.1 s, on every run). With `anchors` (each holding one of the keys), a key's start is reported
    only where an anchor holding it is there, as that anchor's start (see anchor_table)."""
    mod = _module()
    if mod is None or not keys or len(keys) > MAX_KEYS:
        return None
    if any(len(k) < FINGERPRINT or b"\n" in k for k in keys):
        return None
    from denpex.rulebook.cache import cached

    here = Path(__file__)
    offsets, buckets = cached(f"native-plan-{role}", [here, here.with_name("log_ngrams.json")],
                              lambda: plan(keys), b"\0".join(keys))
    table = anchor_table(keys, anchors) if anchors is not None else None
    if anchors is not None and table is None:
        return None  # an anchor holds no key: the keys do not cover them
    try:  # a cache entry is checked, not trusted: the searcher rejects offsets or buckets out of range
        searcher: Searcher = mod.Searcher(list(keys), offsets, buckets, table)
    except (TypeError, ValueError):
        searcher = mod.Searcher(list(keys), *plan(keys), table)
    return searcher


def anchor_table(keys: tuple[bytes, ...], anchors: tuple[bytes, ...]) -> list[list[tuple[bytes, int]]] | None:
    """Per key, the anchors it stands for and its offset in each; each anchor under one key it holds
    (where an anchor is, that key is at that offset), or None where an anchor holds none."""
    table: list[list[tuple[bytes, int]]] = [[] for _ in keys]
    for a in dict.fromkeys(anchors):
        for i, k in enumerate(keys):
            at = a.find(k)
            if at >= 0:
                table[i].append((a, at))
                break
        else:
            return None
    return table
