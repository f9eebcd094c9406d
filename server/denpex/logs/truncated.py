"""Messages cut short: a line that ends inside a known message (a terminal, an excerpt or a log shipper
cut it) or whose message is cut by another writer's output, matched by its longest unambiguous prefix.

The known messages come from the rule book itself, built once per book (``table_for``): every literal
signature, every status-code table message or name behind a signature's literal head (``CUDA error: `` +
each cudaGetErrorString text), and the literal head of other regex signatures when it is long enough to
say something (``terminate called after throwing an instance of '``). A cut text S counts only when every
known message that starts with S completes the line the same way, so the cut must go past whatever the
message shares with any other; where the completions differ but all belong to one rule (``CUDA error:
operation not permitt``: cudaErrorNotPermitted or cudaErrorStreamCaptureUnsupported), that rule alone is
named, without a code and at low confidence.

Only lines the prefilter found are looked at (the matcher calls this where an anchor of a rule was on the
line and no signature confirmed), so a line without an anchor costs nothing here.
"""

from __future__ import annotations

import bisect
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import ahocorasick_rs
import regex

from denpex.logs.hit import Hit
from denpex.rulebook import CodeEntry, RuleBook, Signature
from denpex.rulebook.codes import CodeTable

MIN_CUT = 16  # characters of a known message a cut must keep: shorter cuts say too little
MIN_BODY = 6  # of which past a signature's literal head ("CUDA error: "), for table messages
MIN_REGEX_HEAD = 24  # a regex signature's literal head is a known message only from this length
HEAD = 8  # a message's first characters, searched for in a line: where a message can start
MAX_CANDIDATES = 48  # more known messages start with a cut than this: it says nothing
MAX_READINGS = 4  # distinct completions that may share one rule, for the rule-only answer


@cache
def _cut_mark() -> regex.Pattern[str]:
    """What excerpts put where they cut a line: an ellipsis, "[...]", "(truncated)". Compiled where first
    needed (0.6 ms of every start at import)."""
    return regex.compile(r"(?:\s*(?:\.\.\.|…|\[\.\.\.\]|\[…\]|\((?:truncated|cut)\)|\[truncated\]))+\s*$")


@dataclass(frozen=True)
class Repair:
    """How a hit was found on a line that is not whole: shown on the verdict, and it caps its confidence."""

    kind: str  # truncated | ambiguous-cut | interleaved | wrapped | continued
    note: str
    cap: str | None = "medium"  # the highest confidence such a verdict may have (None: no cap)


@dataclass(frozen=True)
class Known:
    text: str  # the whole message as a line would hold it
    sig: Signature
    entry: CodeEntry | None
    body: int  # where the message proper starts (after a literal head): the cut must reach past it
    open_end: bool  # a regex head: the line may hold all of it and still not match
    generic: bool = False  # of a broad family's table (cudaError_t ...)


class Table:
    """Known messages of one rule book, sorted for prefix look-ups, and their first characters."""

    def __init__(self, known: list[Known], presorted: bool = False) -> None:
        if not presorted:
            known.sort(key=lambda k: k.text)
        self.known = known
        self.texts = [k.text for k in known]
        heads = sorted({k.text[:HEAD] for k in known})
        self.heads = ahocorasick_rs.AhoCorasick(heads) if heads else None
        self.longest = max((len(t) for t in self.texts), default=0)

    def starting_with(self, s: str) -> list[Known] | None:
        """Known messages that start with s (None: too many to mean anything)."""
        lo = bisect.bisect_left(self.texts, s)
        hi = bisect.bisect_left(self.texts, s + "\U0010ffff", lo)
        if hi - lo > MAX_CANDIDATES:
            return None
        return self.known[lo:hi]

    def complete(self, text: str, already: set[tuple[str, int]]) -> list[Hit]:
        """Hits for messages cut at the end of text, or cut mid-line where another message starts.

        ``already``: (rule, signature index) pairs that matched the line whole; they are not reported again.
        """
        if self.heads is None:
            return []
        m = _cut_mark().search(text, max(0, len(text) - 64))
        end = len(text.rstrip()) if m is None else m.start()
        lo = max(0, end - self.longest - HEAD)
        starts = sorted({lo + s for _i, s, _e in self.heads.find_matches_as_indexes(text[lo:end], overlapping=True)})
        if not starts:
            return []
        # a cut ends at the line's end, or where another message starts afresh (two writers' fragments glued)
        # (mid-word only: a message that follows ": " or a space is the text going on, as in "X: Failed to ...")
        cuts = [end, *(q for q in starts if q > starts[0] and _word(text[q - 1]) and _word(text[q])
                       and self._fresh(text, q, starts))]
        hits: list[Hit] = []
        for q in cuts:
            at_end = q == end
            readings: dict[str, list[tuple[int, Known]]] = {}  # completion -> (start, message)
            too_many = False
            for p in starts:
                if p >= q:
                    break
                s = text[p:q]
                if len(s) < MIN_CUT:
                    continue
                got = self.starting_with(s)
                if got is None:
                    too_many = True
                    break
                for k in got:
                    if len(s) - k.body < MIN_BODY:
                        continue
                    if not at_end and len(k.text) > len(s) and k.text[len(s)] == text[q]:
                        continue  # the message goes on past q: no cut there
                    if len(k.text) == len(s) and at_end and not k.open_end:
                        continue  # whole at the line's end: the signature itself decided
                    readings.setdefault(k.text[len(s):], []).append((p, k))
            if too_many or not readings:
                continue
            hits.extend(self._hits(readings, q, at_end, already, Hit))
        return hits

    def _fresh(self, text: str, q: int, starts: list[int]) -> bool:
        """No known message that starts before q reads on past it: the text at q is not the natural rest of
        one ("... exception: CUDA error: " + "an illegal memory access ..." is one message, not two)."""
        for p in starts:
            if p >= q:
                break
            if q + 1 - p >= HEAD and self.starting_with(text[p : q + 1]) != []:
                return False
        return True

    def _hits(self, readings: dict[str, list[tuple[int, Known]]], q: int, at_end: bool,
              already: set[tuple[str, int]], hit_type: type[Hit]) -> list[Hit]:
        where = "the line ends" if at_end else "another message starts"
        targets = {frozenset((k.sig.rule_id, k.sig.index, k.entry.name if k.entry else "") for _p, k in found)
                   for found in readings.values()}
        if len(targets) == 1 and len(readings) > 1:
            # two texts of one code (cudaErrorInvalidNormSetting has two): the cut names it all the same
            readings = {min(readings): [pk for found in readings.values() for pk in found]}
        if len(readings) == 1:
            (rest, found), = readings.items()
            if not rest and not at_end and all(k.open_end for _p, k in found):
                return []  # a regex's literal head, whole, then other text: the regex itself decided
            if rest or at_end:
                repair = Repair("truncated" if at_end else "interleaved",
                                f"matched a truncated line: the text stops where {where}, "
                                f"inside '{found[0][1].text}' (the only known message it starts)")
            else:
                repair = Repair("interleaved", f"matched a message that runs straight into another writer's output "
                                               f"('{found[0][1].text}')")
            out = []
            seen: set[tuple[str, int]] = set()
            # a fragment among other messages: its table code would be handed to whichever specific finding of
            # the line comes first (events.specific_first), so a table entry is named only where no rule knows it
            specific = not at_end and any(not k.generic for _p, k in found)
            for p, k in found:
                key = (k.sig.rule_id, k.sig.index)
                if key in already or key in seen or (specific and k.generic):
                    continue
                seen.add(key)
                out.append(hit_type(k.sig, p, q, k.entry, repair))
            return out
        if len(readings) > MAX_READINGS:
            return []
        # several completions: name the rule they all belong to, without a code
        rules = [{k.sig.rule_id for _p, k in found} for found in readings.values()]
        common = set.intersection(*rules)
        if not common:
            # a broad family whose own text every reading starts with ("terminate called after throwing an
            # instance of '" for each specific terminate message) covers them all
            texts = [found[0][1].text for found in readings.values()]
            common = {k.sig.rule_id for found in readings.values() for _p, k in found
                      if k.generic and all(t.startswith(k.text) for t in texts)}
        if not common:
            return []
        shown = sorted({found[0][1].text for found in readings.values()}, key=len)
        repair = Repair("ambiguous-cut",
                        f"matched a truncated line: the text stops where {where} and may be any of "
                        + " / ".join(f"'{t}'" for t in shown) + "; only the rule they share is named",
                        cap="low")
        out = []
        for rule_id in sorted(common):
            p, k = min(((p, k) for found in readings.values() for p, k in found if k.sig.rule_id == rule_id),
                       key=lambda pk: (pk[0], pk[1].sig.index))
            if (rule_id, k.sig.index) not in already:
                out.append(hit_type(k.sig, p, q, None, repair))
        return out


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def table_for(book: RuleBook) -> Table:
    """The book's known messages, built on first use and kept with the book.

    Building them costs 100-160 ms (every table message is checked against its signature's regex), so the
    result is kept in the per-user cache too (denpex.rulebook.cache), keyed by everything of the book it
    reads (_book_key): a later process rebuilds the table from the cached rows in a few milliseconds."""
    table = book.derived.get("truncated")
    if not isinstance(table, Table):
        table = book.derived["truncated"] = _cached_table(book)
    return table


_SEP = "\1"
_TABLE_FORMAT = b"truncated-table/1"  # bump when Known, known_messages or the rows change


def _book_key(book: RuleBook) -> bytes:
    """What known_messages reads of a book, as bytes: the cache entry's key (a CRC of it is taken there)."""
    parts: list[str] = []
    for rule in book.rules:
        parts.append(f"R{rule.id}\0{rule.generic}")
        for sig in rule.signatures:
            parts.append(f"S{sig.index}\0{sig.literal}\0{sig.regex}\0{sig.ignore_case}\0{sig.table_group}")
        for e in rule.codes:
            parts.append(f"C{e.name}\0{e.number}\0{_SEP.join(e.messages)}\0{_SEP.join(e.aliases)}")
    return _TABLE_FORMAT + "\0".join(parts).encode("utf-8", "surrogatepass")


Row = tuple[str, int, int, int, int, bool, bool]  # text, rule, signature, entry (-1: none), body, open_end, generic


def _rows(book: RuleBook) -> list[Row]:
    """known_messages(book), sorted, as plain rows that name the book's objects by position."""
    rule_pos = {id(r): i for i, r in enumerate(book.rules)}
    by_rule = {r.id: r for r in book.rules}
    out: list[Row] = []
    for k in sorted(known_messages(book), key=lambda k: k.text):
        rule = by_rule[k.sig.rule_id]
        sig = next(i for i, x in enumerate(rule.signatures) if x is k.sig)
        entry = -1 if k.entry is None else next(i for i, e in enumerate(rule.codes) if e is k.entry)
        out.append((k.text, rule_pos[id(rule)], sig, entry, k.body, k.open_end, k.generic))
    return out


def _from_rows(book: RuleBook, rows: list[Row]) -> Table:
    known = []
    for text, r, sig, entry, body, open_end, generic in rows:
        rule = book.rules[r]
        known.append(Known(text, rule.signatures[sig], None if entry < 0 else rule.codes[entry], body, open_end,
                           generic))
    return Table(known, presorted=True)


def _cached_table(book: RuleBook) -> Table:
    from denpex.rulebook.cache import cached

    key = _book_key(book)
    extra = zlib.crc32(key).to_bytes(4, "big") + zlib.crc32(key[::-1]).to_bytes(4, "big") + len(key).to_bytes(8, "big")
    # this module is the entry's first input: its folder names the install (one entry each), its stat the code
    rows = cached("truncated", [Path(__file__)], lambda: _rows(book), extra=extra)
    try:
        return _from_rows(book, rows)
    except (IndexError, TypeError, ValueError):  # an entry written by another layout: build afresh
        return Table(known_messages(book))


def known_messages(book: RuleBook) -> list[Known]:
    out: list[Known] = []
    for rule in book.rules:
        table = CodeTable.of(rule) if rule.codes else None
        for sig in rule.signatures:
            if sig.ignore_case:
                continue  # a cut is compared as written
            if sig.regex is None:
                if sig.literal is not None and len(sig.literal) >= MIN_CUT:
                    out.append(Known(sig.literal, sig, None, 0, False, rule.generic))
                continue
            head, group = literal_head(sig.regex)
            if group is not None and table is not None and sig.table_group == group:
                out.extend(_table_messages(sig, head, group, rule.codes, table, rule.generic))
            elif group is None and len(head) >= MIN_REGEX_HEAD:
                out.append(Known(head, sig, None, 0, True, rule.generic))
    return out


def _table_messages(sig: Signature, head: str, group: str, entries: tuple[CodeEntry, ...],
                    table: CodeTable, generic: bool) -> list[Known]:
    assert sig.regex is not None
    pattern = regex.compile(sig.regex)
    out = []
    for e in entries:
        texts = e.messages if group == "message" else (e.name, *e.aliases) if group == "name" else ()
        for t in texts:
            full = head + t
            if len(full) < MIN_CUT:
                continue
            # kept only where the signature itself reads the whole text as this entry
            m = pattern.search(full)
            if m is None or table.lookup(group, m.group(group)) is not e:
                continue
            out.append(Known(full, sig, e, len(head), False, generic))
    return out


_META = set(".^$*+?{}[]()|\\")
_ZERO_WIDTH = set("bBAZ")
_QUANT = set("?*{")


def literal_head(pattern: str) -> tuple[str, str | None]:
    """The literal text every match of pattern starts with, and the name of a group right after it.

    Conservative: an alternation, a flag or a character class ends the head; a character made optional by
    a quantifier is not part of it.
    """
    if _top_level_alternation(pattern):
        return "", None
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 >= len(pattern):
                break
            n = pattern[i + 1]
            if n in _ZERO_WIDTH:
                i += 2
                continue
            if n.isalnum():
                break  # \d, \s, \w, \x..: a class, not a literal
            ch, i = n, i + 2
        elif c == "(":
            m = regex.match(r"\(\?P<(\w+)>", pattern[i:])
            return "".join(out), (m.group(1) if m else None)
        elif c in _META:
            break
        else:
            ch, i = c, i + 1
        if i < len(pattern) and pattern[i] in _QUANT:
            break  # optional: not in every match
        out.append(ch)
        if i < len(pattern) and pattern[i] == "+":
            break
    return "".join(out), None


def _top_level_alternation(pattern: str) -> bool:
    depth = 0
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return True
        i += 1
    return False
