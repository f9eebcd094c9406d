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
    0.1 s, on every run). With `anchors` (each holding one of the keys), the searcher reports where an
    anchor is, as its start, and searches the keys anchor_keys() chooses for them."""
    mod = _module()
    if mod is None or not keys or len(keys) > MAX_KEYS:
        return None
    if any(len(k) < FINGERPRINT or b"\n" in k for k in keys):
        return None
    from denpex.rulebook.cache import cached

    here = Path(__file__)
    extra = b"\0".join(keys) + (b"\1" + b"\0".join(anchors) if anchors is not None else b"")
    got = cached(f"native-plan-{role}", [here, here.with_name("log_ngrams.json")],
                 lambda: _build(keys, anchors), extra)
    try:  # a cache entry is checked, not trusted: the searcher rejects what does not fit its keys
        if got is None:
            return None  # an anchor holds no key: the keys do not cover them
        return mod.Searcher(*got)  # type: ignore[no-any-return]
    except (TypeError, ValueError):
        got = _build(keys, anchors)
        return mod.Searcher(*got) if got is not None else None  # type: ignore[no-any-return]


Built = tuple[tuple[bytes, ...], list[int], list[int], "list[list[tuple[bytes, int]]] | None"]


def _build(keys: tuple[bytes, ...], anchors: tuple[bytes, ...] | None) -> Built | None:
    table = None
    if anchors is not None:
        chosen = anchor_keys(keys, anchors)
        if chosen is None:
            return None
        keys, table = chosen
    offsets, buckets = plan(keys)
    return keys, offsets, buckets, table


COMMON = 1e-3  # a fingerprint this frequent in log text (share of its 4-grams) is worth replacing
OWN_KEY = 8  # bytes of an anchor's own key


def _share(key: bytes) -> float:
    """How often the key's rarest 4 bytes (its fingerprint, as plan() picks it) occur in log text."""
    _bytes, grams = _tables()
    total = sum(grams.values()) or 1.0
    return min(grams.get(key[o:o + FINGERPRINT], 0.0) for o in range(len(key) - FINGERPRINT + 1)) / total


def anchor_keys(keys: tuple[bytes, ...], anchors: tuple[bytes, ...]
                ) -> tuple[tuple[bytes, ...], list[list[tuple[bytes, int]]]] | None:
    """The keys to search for these anchors, and per key the anchors under it with its offset in each
    (where an anchor is, its key is at that offset); None where an anchor holds no key.

    Each anchor goes under the key it holds whose fingerprint is rarest in log text; where even that
    one is common (COMMON), under its own OWN_KEY bytes with the rarest fingerprint, if rarer: the
    cover's '.py", li' (for 'graphs.py", line ' and 'cudagraph_trees.py", line ') is on every traceback
    frame. Keys with no anchor under them are not searched: fewer fingerprints, fewer false candidates."""
    under: dict[bytes, list[tuple[bytes, int]]] = {}
    for a in dict.fromkeys(anchors):
        held = [k for k in keys if k in a]
        if not held or len(a) < FINGERPRINT or b"\n" in a:
            return None
        best = min(held, key=lambda k: (_share(k), k))
        n = min(OWN_KEY, len(a))
        if _share(best) > COMMON:
            own = min((a[i:i + n] for i in range(len(a) - n + 1)), key=lambda w: (_share(w), w))
            if _share(own) < _share(best):
                best = own
        under.setdefault(best, []).append((a, a.find(best)))
    if len(under) > MAX_KEYS:
        return None
    out = tuple(sorted(under))
    return out, [under[k] for k in out]
