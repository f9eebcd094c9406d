"""Lines that are not whole: a message wrapped onto the next line, an exception whose message starts on
the line after ``RuntimeError:``, and two writers' ``terminate called ...`` outputs run together.

Called by the diagnoser's collector for the lines the prefilter found, and only for two kinds of them:
a line where a rule's anchor stood but no signature matched (``Matcher.missed``), which is joined with
the line before or after it and matched again (a Triton device assert or an NVRM Xid line that a
terminal, dmesg or a log shipper broke in two); and a line with a new hit, whose line before is looked
at for a bare exception header (``RuntimeError:`` with nothing after it). Every other line costs one
attribute test. A join counts only for signatures whose match spans the join: what one line matches
alone is that line's own.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING

import regex

from denpex.logs.attribution import attribute, strip_prefixes
from denpex.logs.normalise import decode, segments
from denpex.logs.scanner import LineHit, Window
from denpex.logs.truncated import Repair

if TYPE_CHECKING:
    from denpex.logs.diagnose import Verdict, _Collector
    from denpex.logs.matcher import Hit, Matcher

MAX_JOIN = 4000  # characters of a neighbour line read
# characters each side of a join that are matched again: a wrapped message spans a few hundred (a Triton
# device assert with an Inductor path, an NVRM record), and a rule's slow regex on a long line is not run
# again over both lines whole (a hostile 8,000-character line took 8x the time of its one match)
JOIN_WINDOW = 600
# an exception line with no message: Python prints the message on the next line when it starts with a newline
_BARE_EXCEPTION = re.compile(
    r"^\s*(?:[A-Za-z_]\w{0,60}\.){0,6}[A-Za-z_]\w{0,80}(?:Error|Exception|Exit|Interrupt|Failure|Fault)\s*:\s*$"
)
_TERMINATE = "terminate called after throwing an instance of"
_WHAT = "what():"


def repair(c: _Collector, lh: LineHit, window: Window, start: int) -> tuple[LineHit, int]:
    """lh, or the line it stands for with the hits found across its neighbours; and how many lines at the
    end of the lines before ``start`` belong to it (1 when it starts on the line before)."""
    matcher = c.matcher
    back = 0
    if matcher.missed and all(h.repair is not None for h in lh.hits):
        joined = _join_next(matcher, lh, window, start)
        if joined is None and not lh.hits:
            joined = _join_previous(matcher, lh, window, start)
            back = 1 if joined is not None else 0
        if joined is not None:
            lh = joined
    if lh.hits and _new(c, lh):
        header = _exception_header(lh, window, start, back)
        if header is not None:
            lh, back = header, back + 1
    if (_TERMINATE in lh.text or _WHAT in lh.text) and _interleaved(lh.text):
        lh = _interleaved_terminate(matcher, lh, window, start)
    return lh, back


def _new(c: _Collector, lh: LineHit) -> bool:
    key = lh.who.key()
    return any((h.signature.rule_id, h.signature.role, h.signature.index, *key) not in c.findings for h in lh.hits)


def _clean(raw: str, last: bool) -> str:
    parts = segments(raw[:MAX_JOIN])
    return parts[-1] if last else parts[0]


def _next_line(window: Window, start: int) -> str | None:
    cur, end = window.cur, window.cur_end
    nl = cur.find(b"\n", start, end)
    if nl < 0 or nl + 1 >= end:
        return None  # the next line is in the next chunk (or there is none): not joined
    stop = cur.find(b"\n", nl + 1, end)
    if stop < 0:
        stop = end
    return _clean(decode(cur[nl + 1 : min(stop, nl + 1 + MAX_JOIN)]), last=False)


def _previous_line(window: Window, start: int, skip: int = 0) -> tuple[int, str] | None:
    got = window.lines_before(start, 1 + skip)
    if len(got) < 1 + skip:
        return None
    no, raw = got[0]
    return no, _clean(raw, last=True)


def _spanning(matcher: Matcher, first: str, second: str) -> tuple[str, list[Hit]] | None:
    """The joined text and the hits that need both parts, trying the parts as they are, then with a space."""
    head = first.rstrip()[-JOIN_WINDOW:]
    body = strip_prefixes(second)[:JOIN_WINDOW]
    for sep in ("", " "):
        if sep and (not body or body[0].isspace()):
            continue
        text = head + sep + body
        cut = len(head)
        hits = [h for h in matcher.match_text(text) if h.start < cut < h.end]
        if hits:
            return text, hits
    return None


def _wrapped(hits: list[Hit], line: int) -> list[Hit]:
    note = f"matched across a wrapped line: the message starts on line {line} and goes on on line {line + 1}"
    out = []
    for h in hits:
        r = h.repair
        rep = Repair("wrapped", note, cap=None) if r is None else Repair(r.kind, f"{note}; {r.note}", r.cap)
        out.append(replace(h, repair=rep))
    return out


def _join_next(matcher: Matcher, lh: LineHit, window: Window, start: int) -> LineHit | None:
    nxt = _next_line(window, start)
    if not nxt or not nxt.strip():
        return None
    got = _spanning(matcher, lh.text, nxt)
    if got is None:
        return None
    text, hits = got
    return LineHit(lh.line, text[:2000], _wrapped(hits, lh.line), lh.who, lh.offset)


def _join_previous(matcher: Matcher, lh: LineHit, window: Window, start: int) -> LineHit | None:
    prev = _previous_line(window, start)
    if prev is None or not prev[1].strip():
        return None
    no, text0 = prev
    who = attribute(text0)
    if lh.who.key() != who.key() and lh.who.rank is not None and who.rank is not None:
        return None  # two writers' lines, not one line broken in two
    got = _spanning(matcher, text0, lh.text)
    if got is None:
        return None
    text, hits = got
    return LineHit(no, text[:2000], _wrapped(hits, no), who if who.evidence else lh.who, lh.offset)


def _exception_header(lh: LineHit, window: Window, start: int, back: int) -> LineHit | None:
    """'RuntimeError:' alone on the line before, by the same writer: the exception line is that one, and the
    message is this line (Python prints 'XError: ' + str(e), and str(e) may start with a newline)."""
    prev = _previous_line(window, start, back)
    if prev is None:
        return None
    no, text0 = prev
    if ":" not in text0 or not _BARE_EXCEPTION.match(strip_prefixes(text0)):
        return None
    who = attribute(text0)
    if who.key() != lh.who.key() and who.evidence and lh.who.evidence:
        return None
    head = text0.rstrip() + " "
    body = strip_prefixes(lh.text).lstrip()
    shift = len(head) - (len(lh.text) - len(body))
    note = f"the exception on line {no} has its message on line {no + 1}: matched as one line"
    hits = []
    for h in lh.hits:
        r = h.repair
        rep = Repair("continued", note, cap=None) if r is None else Repair(r.kind, f"{note}; {r.note}", r.cap)
        hits.append(replace(h, start=h.start + shift, end=h.end + shift, repair=rep))
    return LineHit(no, (head + body)[:2000], hits, lh.who if lh.who.evidence else who, lh.offset)


def _interleaved(text: str) -> bool:
    """Two terminate handlers' pieces on one line: the marker twice, or the thrown type written twice."""
    if text.count(_TERMINATE) > 1 or text.count(_WHAT) > 1:
        return True
    at = text.rfind("instance of '")
    if at < 0:
        return False
    t = text[at + len("instance of '"):].split("'", 1)[0]
    half = len(t) // 2
    return half >= 8 and len(t) % 2 == 0 and t[:half] == t[half:]


def _interleaved_terminate(matcher: Matcher, lh: LineHit, window: Window, start: int) -> LineHit:
    """Two processes' libstdc++ terminate handlers write their lines in pieces (the words, the type name, the
    closing quote, "  what():  ", the message), and the pieces interleave: "terminate called after throwing an
    instance of 'terminate called after throwing an instance of 'c10::ErrorXc10::ErrorX'". Where both wrote
    the same piece, the line holds it twice in a row; with each such repeat written once (and, when the line
    stops inside a piece, with the next line) the line reads as one writer's, and what it then matches is
    named. Which process wrote which piece is lost, so such a line's verdict is at most of medium confidence."""
    n = max(lh.text.count(_TERMINATE), lh.text.count(_WHAT), 2)
    note = (f"{n} writers' 'terminate called after throwing' outputs are interleaved on this line: each "
            "message is named as read with the pieces both wrote taken once; which process wrote which is not known")
    had = {(h.signature.rule_id, h.signature.index) for h in lh.hits}
    new = _new_hits(matcher, _collapse(lh.text), had)
    if not new and not lh.text.rstrip().endswith("'"):
        nxt = _next_line(window, start)
        if nxt:
            alone = {(h.signature.rule_id, h.signature.index) for h in matcher.match_text(nxt)}
            new = _new_hits(matcher, _collapse(lh.text + strip_prefixes(nxt)), had | alone)
    rep = Repair("interleaved", note)
    hits = [h if h.repair is not None else replace(h, repair=rep) for h in lh.hits]
    hits += [replace(h, repair=rep) for h in new]
    return LineHit(lh.line, lh.text, hits, lh.who, lh.offset)


@cache
def _repeat() -> regex.Pattern[str]:
    """A piece written twice in a row (8 to 200 characters); compiled where first needed, not at import."""
    return regex.compile(r"(.{8,200}?)\1+")


def _collapse(text: str) -> str:
    try:
        return str(_repeat().sub(r"\1", text[:MAX_JOIN], timeout=0.05))
    except TimeoutError:
        return text


def _new_hits(matcher: Matcher, text: str, had: set[tuple[str, int]]) -> list[Hit]:
    return [h for h in matcher.match_text(text) if (h.signature.rule_id, h.signature.index) not in had]


_ORDER = {"low": 0, "medium": 1, "high": 2}


def cap_confidence(v: Verdict) -> None:
    """A verdict on a line that is not whole says so, and is at most as confident as its repair allows."""
    r = v.finding.repair
    if r is None:
        return
    if r.cap is not None and _ORDER.get(v.confidence, 0) > _ORDER[r.cap]:
        v.confidence = r.cap
    v.notes.append(r.note[0].upper() + r.note[1:] + ".")
