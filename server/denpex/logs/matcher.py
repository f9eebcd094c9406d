"""Signature matching: a literal prefilter over raw bytes, then exact checks on candidate lines.

One big regex alternation cannot keep up with a multi-gigabyte log; a multi-literal
automaton (Aho-Corasick with a SIMD prefilter) finds the few candidate lines, and only
those are decoded, normalised and checked against each signature.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

import ahocorasick_rs
import regex

from denpex.logs import native
from denpex.logs.hit import Hit as Hit  # re-exported: hits are the matcher's answer
from denpex.logs.mapped import MappedChunk, buffer_of
from denpex.rulebook import RuleBook, Signature
from denpex.rulebook.codes import CodeTable

if TYPE_CHECKING:
    from denpex.logs.frameworks import Framework

# Lines the diagnoser reads even when no rule names them (NCCL progress, tracebacks, frameworks).
EXTRA_ANCHORS: tuple[str, ...] = (
    "Traceback (most recent call last)",
    "During handling of the above exception",
    "The above exception was the direct cause",
    "last enqueued",
    "Last enqueued",
    "SeqNum=",
    "(local_rank: ",
)
# Lines that tell the phase a framework is in (see denpex.logs.phase); the diagnoser reads them too.
PHASE_ANCHORS: tuple[str, ...] = (
    "Capturing CUDA graphs",  # vLLM V1 progress bar
    "Capturing cudagraphs for decoding",  # vLLM V0
    "Capturing the model for CUDA graphs",  # vLLM V0
    "Graph capturing finished in",  # vLLM, both
    "Capture cuda graph begin",  # SGLang
    "Capture cuda graph end",  # SGLang
    'graphs.py", line ',  # frames of torch/cuda/graphs.py (replay, capture_end) in a traceback
    'cudagraph_trees.py", line ',
)

REGEX_TIMEOUT_S = 0.05  # a pathological line cannot stall a scan
# Two-stage prefilter: the SIMD packed searcher (Teddy) in the aho-corasick crate takes at most
# 64 patterns; past that a scan drops to the plain automaton (about 4x slower). Stage one searches
# short keys (in groups of at most 64), each a substring of some anchors and together covering
# all of them; stage two runs the full anchor automaton on each line a key hit. Exact: a line
# holds an anchor only if it holds one of its keys, and no anchor spans a newline, so the
# leftmost-first results per line equal those of one pass over the whole chunk.
KEY_MIN = 8  # shortest key cut from an anchor (shorter anchors are their own key)
MAX_KEYS = 64
KEY_HITS_PER_MIB = 2000  # past this many key hits, the single automaton is cheaper for that chunk (the two
# cross near 2,000 a MiB: a benign log whose every fifth line holds 'exception_count=0', 1,435 hits,
# 3.2 ms per line against 5.6 ms in one pass; a fifth of lines traceback frames, 2,796, 5.0 against 3.7)
WINDOW = 4096  # characters around an anchor in which a signature regex is checked


class Matcher:
    def __init__(self, book: RuleBook) -> None:
        self.book = book
        self.signatures: list[Signature] = [s for s in book.signatures]
        anchors: list[str] = []
        index: dict[str, int] = {}
        self._by_anchor: list[list[Signature]] = []
        for sig in self.signatures:
            key = sig.anchor
            if key not in index:
                index[key] = len(anchors)
                anchors.append(key)
                self._by_anchor.append([])
            self._by_anchor[index[key]].append(sig)
        for extra in (*EXTRA_ANCHORS, *PHASE_ANCHORS):
            if extra not in index:
                index[extra] = len(anchors)
                anchors.append(extra)
                self._by_anchor.append([])
        self.anchors = anchors
        # Leftmost-first enables the packed SIMD prefilter: about 3x faster than overlapping search.
        self.bytes_prefilter = ahocorasick_rs.BytesAhoCorasick(
            [a.encode("utf-8") for a in anchors], matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST
        )
        self.keys: tuple[bytes, ...] | None = None  # stage one's keys (None: one pass of the anchors)
        self._key_prefilters: list[ahocorasick_rs.BytesAhoCorasick] | None = None
        self.native: native.Searcher | None = None  # the keys' one-pass search, where built
        if len(anchors) > MAX_KEYS and not any("\n" in a for a in anchors):
            self.keys = _cached_cover(tuple(a.encode("utf-8") for a in anchors), KEY_MIN)
            # anchors too: a key's line is reported only where an anchor holding the key is on it
            self.native = native.searcher(self.keys, anchors=tuple(a.encode("utf-8") for a in anchors))
        # On a candidate line every anchor counts, overlapping or not.
        self.text_anchors = ahocorasick_rs.AhoCorasick(anchors)
        # compiled on first use: a run checks few signatures, and compiling all 150 cost a tenth
        # of a small file's whole run
        self._compiled: dict[tuple[str, int], regex.Pattern[str]] = {}
        self._tables = {r.id: CodeTable.of(r) for r in book.rules if r.codes}
        self._folded = [
            (sig, sig.anchor.lower()) for sig in self.signatures if sig.ignore_case
        ]
        self.missed = False  # the last match_text found a rule's anchor and no signature (logs.line_repair)

    @property
    def key_prefilters(self) -> list[ahocorasick_rs.BytesAhoCorasick]:
        """Stage one in the crate's searchers, one per key group (key_groups): built where first used,
        as only a matcher without the native search scans with them (0.6 ms of every start)."""
        if self._key_prefilters is None:
            self._key_prefilters = [
                ahocorasick_rs.BytesAhoCorasick(list(g), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)
                for g in key_groups(self.keys)
            ] if self.keys else []
        return self._key_prefilters

    def candidate_offsets(self, data: bytes | bytearray | memoryview | MappedChunk) -> list[int]:
        """Start offsets of the leftmost-first, non-overlapping anchor matches in data."""
        return self.scan_chunk(data)[0]

    def scan_chunk(self, data: bytes | bytearray | memoryview | MappedChunk) -> tuple[list[int], list[int] | None, int | None]:
        """candidate_offsets(data), with the newlines before each offset and in all of data where
        the native search counted them in the same pass (else None twice: the caller counts)."""
        full = self.bytes_prefilter.find_matches_as_indexes
        raw = buffer_of(data)  # what the searches read
        if not self.keys or isinstance(data, memoryview):
            return [start for _idx, start, _end in full(raw)], None, None
        total: int | None = None  # newlines in data, where the native search counted them
        if self.native is not None:
            starts, before, total = self.native.scan(raw)
            key_hits = list(zip(starts, before, strict=True))
        else:  # the crate's passes: no counts (the 0s are never returned)
            key_hits = [(pos, 0) for kp in self.key_prefilters for _idx, pos, _end in kp.find_matches_as_indexes(raw)]
        if len(key_hits) > KEY_HITS_PER_MIB * (len(data) / (1 << 20) + 1):
            return [start for _idx, start, _end in full(raw)], None, None  # key-dense text: one pass is cheaper
        if self.native is not None or len(self.key_prefilters) > 1:
            key_hits.sort()  # native starts are nearly in order already
        out: list[int] = []
        out_before: list[int] = []
        line_end = -1
        for pos, nl in key_hits:
            if pos < line_end:
                continue  # this line was checked already
            start = data.rfind(b"\n", 0, pos) + 1
            line_end = data.find(b"\n", pos)
            if line_end < 0:
                line_end = len(data)
            got = [start + s for _i, s, _e in full(data[start:line_end])]
            out.extend(got)
            out_before.extend([nl] * len(got))
        return out, (out_before if total is not None else None), total

    def match_text(self, text: str) -> list[Hit]:
        """Every signature that matches this (normalised) text."""
        hits: list[Hit] = []
        seen: set[tuple[str, int]] = set()
        found = self.text_anchors.find_matches_as_indexes(text, overlapping=True)
        for idx, a_start, a_end in found:
            for sig in self._by_anchor[idx]:
                key = (sig.rule_id, sig.index)
                if key in seen:
                    continue
                hit = self._confirm(sig, text, a_start, a_end)
                if hit is not None:
                    seen.add(key)
                    hits.append(hit)
        if self._folded:
            lower = text.lower()
            for sig, folded in self._folded:
                key = (sig.rule_id, sig.index)
                if key in seen:
                    continue
                pos = lower.find(folded)
                if pos >= 0:
                    hit = self._confirm(sig, text, pos, pos + len(folded))
                    if hit is not None:
                        seen.add(key)
                        hits.append(hit)
        # a rule's anchor is on the line but no signature confirmed: a message cut short? (logs.truncated)
        # or, with hits, an anchor glued onto a word ("...memory acCUDA error: ..."): two writers' fragments?
        self.missed = not hits and any(self._by_anchor[idx] for idx, _s, _e in found)
        if self.missed or (len(found) > 1 and any(s > 0 and (text[s - 1].isalnum() or text[s - 1] == "_")
                                                  for _i, s, _e in found)):
            from denpex.logs.truncated import table_for

            hits.extend(table_for(self.book).complete(text, seen))
        hits.sort(key=lambda h: h.start)
        return hits

    def _confirm(self, sig: Signature, text: str, a_start: int, a_end: int) -> Hit | None:
        if sig.regex is None:
            return Hit(sig, a_start, a_end)
        pattern = self._compiled.get((sig.rule_id, sig.index))
        if pattern is None:
            flags = regex.IGNORECASE if sig.ignore_case else 0
            pattern = self._compiled[(sig.rule_id, sig.index)] = regex.compile(sig.regex, flags)
        lo = max(0, a_start - WINDOW)
        hi = min(len(text), a_end + WINDOW)
        if sig.table_group is not None:
            return self._confirm_table(sig, pattern, text, lo, hi)
        try:
            m = pattern.search(text, lo, hi, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            return None
        if m is None:
            return None
        return Hit(sig, m.start(), m.end())

    def _confirm_table(self, sig: Signature, pattern: regex.Pattern[str], text: str,
                       lo: int, hi: int) -> Hit | None:
        """A table signature counts only where its group names an entry of the rule's codes."""
        table = self._tables[sig.rule_id]
        group = sig.table_group
        assert group is not None
        try:
            for n, m in enumerate(pattern.finditer(text, lo, hi, timeout=REGEX_TIMEOUT_S)):
                entry = table.lookup(group, m.group(group))
                if entry is not None:
                    return Hit(sig, m.start(), m.end(), entry)
                if n >= 8:
                    break
        except TimeoutError:
            return None
        return None


def key_groups(keys: tuple[bytes, ...]) -> list[tuple[bytes, ...]]:
    """The keys cut into searcher groups: full groups of MAX_KEYS and one with the rest.

    Above 32 patterns the crate runs its "fat" searcher (16 buckets, 16 bytes a step), up to 32 the
    "slim" one (8 buckets, 32 bytes a step): a pass over a group of 23 costs less than one over 43.
    For the 87 keys of the rule book, 23 + 64 scanned a 1 GiB log in 0.25 s against 0.27-0.29 s
    for 44 + 43 (two processes, same run).
    """
    groups = -(-len(keys) // MAX_KEYS)
    first = len(keys) - MAX_KEYS * (groups - 1)
    return [keys[:first], *(keys[i : i + MAX_KEYS] for i in range(first, len(keys), MAX_KEYS))]


def _cached_cover(anchors: tuple[bytes, ...], min_len: int) -> tuple[bytes, ...]:
    """cover_keys, kept in the per-user cache: the greedy cover costs 15 ms of every start."""
    from pathlib import Path

    from denpex.rulebook.cache import cached

    extra = b"\0".join((str(min_len).encode(), *anchors))
    keys = cached("cover-keys", [Path(__file__)], lambda: cover_keys(anchors, min_len), extra)
    # the prefilter is exact only if every anchor holds a key: a cache entry is checked, not trusted
    # (by an automaton of the keys: an anchor holds one where it finds a match; 0.3 ms where testing
    # each key in each anchor in Python took 3 ms of every start)
    if not isinstance(keys, tuple) or not all(type(k) is bytes for k in keys):
        return cover_keys(anchors, min_len)
    if not keys or b"" in keys:  # no key (held by no anchor), or one that every anchor holds
        return keys if b"" in keys or not anchors else cover_keys(anchors, min_len)
    find = ahocorasick_rs.BytesAhoCorasick(list(keys), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)
    if not all(find.find_matches_as_indexes(a) for a in anchors):
        keys = cover_keys(anchors, min_len)
    return keys


@lru_cache(maxsize=16)
def cover_keys(anchors: tuple[bytes, ...], min_len: int) -> tuple[bytes, ...]:
    """Few short keys such that every anchor contains at least one (greedy set cover).

    Keys are cut from the anchors, preferably not starting or ending with a space: the SIMD
    searcher fingerprints a key by its first bytes, and a space there (or a key like " of the ")
    makes it verify half the log. Ties go to a key with a byte other than a lowercase letter or
    space, then to the longer key, then to the smaller.
    """
    plain = set(b"abcdefghijklmnopqrstuvwxyz ")
    subs: dict[bytes, set[bytes]] = {}
    for a in set(anchors):
        n = min(min_len, len(a))
        every = {a[i : i + n] for i in range(len(a) - n + 1)}
        subs[a] = {k for k in every if k[:1] != b" " and k[-1:] != b" "} or every
    uncovered = set(subs)
    # counts are kept up to date as anchors get covered (not recounted each round), and the
    # static part of the tie-break is computed once per key: start-up pays for this in every run
    count: Counter[bytes] = Counter()
    for a in uncovered:
        count.update(subs[a])
    rank = {k: (set(k) <= plain, -len(k), k) for k in count}
    keys: list[bytes] = []
    while uncovered:
        top = max(count.values())
        best = min((k for k, n in count.items() if n == top), key=rank.__getitem__)
        keys.append(best)
        covered = {a for a in uncovered if best in a}
        uncovered -= covered
        for a in covered:
            count.subtract(subs[a])
        count = +count  # drop keys no uncovered anchor holds
    return tuple(sorted(keys))




@lru_cache(maxsize=1)
def _framework_prefilter() -> ahocorasick_rs.BytesAhoCorasick:
    from denpex.logs.frameworks import FRAMEWORKS

    markers = [m.encode("utf-8") for fw in FRAMEWORKS for m in fw.markers]
    return ahocorasick_rs.BytesAhoCorasick(markers, matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST)


def detect_frameworks(texts: list[str], head: bytes = b"") -> list[Framework]:
    """frameworks.detect([head decoded, *texts]), with a SIMD prefilter first.

    A verdict's texts include the file's first 64 KiB (``head``, raw); decoding, joining and
    encoding it again for the prefilter cost more than the whole scan of a small rank file in a
    folder of a thousand, so the raw bytes are searched as they are: every marker is ASCII, and
    ASCII bytes decode to themselves (a replacement character is never part of a marker). Where the
    prefilter finds no marker (none holds a newline, so none spans a join) none is there; where it
    finds one, frameworks.detect decides, as before.
    """
    from denpex.logs import frameworks

    find = _framework_prefilter().find_matches_as_indexes
    joined = "\n".join(texts).encode("utf-8", "surrogatepass")
    if not find(head) and not find(joined):
        return []
    if head:
        texts = [head.decode("utf-8", errors="replace"), *texts]
    return frameworks.detect(texts)
