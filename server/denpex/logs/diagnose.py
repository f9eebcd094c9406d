"""From signature hits to a verdict: what failed first, where, why, and how to check a fix.

Public API (the CLI and the language server call these):
    diagnose_text(text, book=None, context=100) -> Diagnosis
    diagnose_path(path, book=None, context=100, progress=None) -> Diagnosis   (diagnose_file.py)
    Diagnosis.to_json() -> dict in the stable `denpex.diagnosis/1` shape

When no rule finds an initiating failure, `Diagnosis.first_error` holds the first error line found
by its shape (`denpex.logs.first_error`): not a verdict, and never with high confidence.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, BinaryIO

import regex

from denpex.logs import events, frameworks, line_repair, phase
from denpex.logs.attribution import Attribution, attribute, strip_prefixes
from denpex.logs.matcher import Matcher, detect_frameworks
from denpex.logs.scanner import LineHit, ScanStats, Window, iter_line_hits
from denpex.logs.traceback import Frame, frames_before, innermost_user_frame
from denpex.rulebook import CodeEntry, Rule, RuleBook, load_rulebook

if TYPE_CHECKING:  # imported where used: its patterns cost a start 13 ms, and most runs never need them
    from denpex.logs.first_error import FirstError
    from denpex.logs.hit import Hit
    from denpex.logs.truncated import Repair

SCHEMA = "denpex.diagnosis/1"
FRAME_LOOKBACK = 200
MAX_CONTEXTS = 256
_GRAPH_FRAME = re.compile(r'(?:torch/cuda/graphs\.py|torch/_inductor/cudagraph_trees\.py)", line \d+, in (\w+)')

_SEQ_TIMEOUT = re.compile(r"SeqNum=(\d+)")
_LAST_ENQ = re.compile(r"[Ll]ast enqueued (?:NCCL )?work: (\d+)")
_ROOT_CAUSE_RANK = re.compile(r"^\s*rank\s*:\s*(\d+) \(local_rank: (\d+)\)")


@dataclass
class Finding:
    rule: str
    role: str
    line: int
    text: str
    who: Attribution
    variant: str = ""
    count: int = 1
    ranks: set[int] = field(default_factory=set)
    span: int = 0  # length of the matched text: on one line, the longer (more specific) match wins
    entry: CodeEntry | None = None  # the status code a table rule's signature named
    generic: bool = False  # from a broad family rule: a specific rule on the same line wins
    wrapper: bool = False  # wraps the real message, which the next lines of the event carry
    wrapped_by: Finding | None = None  # the wrapper line this report is the detail of
    repair: Repair | None = None  # found on a line that is not whole (cut, wrapped, interleaved): logs.line_repair
    # what this finding's rule reported (its status code, else the matched text), and what its later hits on
    # the lines just after it (events.EVENT_LINES) reported: another report there is an error of its own
    said: str = ""
    near_said: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "role": self.role, "line": self.line, "text": self.text,
            "rank": self.who.rank, "local_rank": self.who.local_rank, "node": self.who.node,
            "process": self.who.process, "evidence": list(self.who.evidence), "count": self.count,
            "variant": self.variant or None, "status_code": _entry_json(self.entry),
        }


def _entry_json(e: CodeEntry | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"name": e.name, "number": e.number, "message": e.messages[0] if e.messages else None,
            "meaning": e.meaning or None}


@dataclass
class Verdict:
    rule: Rule
    finding: Finding
    confidence: str
    context: list[tuple[int, str]]
    frames: list[Frame]
    alternatives: list[dict[str, Any]]
    via: str | None = None  # parent rule a refinement came from
    notes: list[str] = field(default_factory=list)
    fingerprint: Finding | None = None
    suspects: list[int] = field(default_factory=list)
    frameworks: list[frameworks.Framework] = field(default_factory=list)
    first_divergence: tuple[int, str] | None = None
    phase: phase.PhaseEvidence | None = None
    related_override: str | None = None  # from a rule hint that matched the verdict line
    _parent: Rule | None = None  # the rule a refinement came from

    @property
    def graph_related(self) -> str:
        """yes / no / depends, for this verdict: a code's own answer beats its family's, and
        'depends' becomes yes when the log puts the failure in capture or replay."""
        entry = self.finding.entry
        own = entry is not None and entry in self.rule.codes
        value = (self.related_override or (entry.graph_related if own and entry is not None else None)
                 or self.rule.graph_related)
        if value == "depends" and self.phase is not None:
            return "yes"
        return value

    @property
    def parent(self) -> Rule | None:
        """The rule this verdict was refined from."""
        return self._parent

    def fix_text(self) -> str:
        parts = []
        for fw in self.frameworks[:1]:
            if self.rule.eager_fallback:
                parts.append(f"{fw.name}: {fw.eager_flag}")
        entry = self.finding.entry
        if entry is not None and entry.fix and entry in self.rule.codes:
            parts.append(entry.fix)
        parts.append(self.rule.fix)
        return "\n".join(parts)

    def to_json(self, context_n: int) -> dict[str, Any]:
        ctx = self.context[-context_n:] if context_n > 0 else []
        f = self.finding
        return {
            "rule": self.rule.id, "code": self.rule.code, "title": self.rule.title,
            "line": f.line, "text": f.text, "rank": f.who.rank, "local_rank": f.who.local_rank,
            "node": f.who.node, "process": f.who.process, "attribution": list(f.who.evidence),
            "confidence": self.confidence, "root_cause": self.rule.root_cause,
            "fix": self.fix_text(), "eager_fallback": self.rule.eager_fallback or None,
            "verify": self.rule.verify_command(), "asynchronous": self.rule.asynchronous,
            "via": self.via, "notes": list(self.notes),
            "context": {"start_line": ctx[0][0] if ctx else f.line, "end_line": f.line,
                        "lines": [t for _n, t in ctx]},
            "frames": [fr.to_json() for fr in self.frames],
            "fingerprint": self.fingerprint.to_json() if self.fingerprint else None,
            "suspect_ranks": self.suspects,
            "frameworks": [fw.name for fw in self.frameworks],
            "first_divergence": (
                {"line": self.first_divergence[0], "text": self.first_divergence[1]}
                if self.first_divergence else None
            ),
            "checklist": list(self.rule.checklist),
            "references": list(self.rule.references),
            "alternatives": self.alternatives,
            "status_code": _entry_json(f.entry),
            "phase": ({"name": self.phase.phase, "evidence": self.phase.evidence}
                      if self.phase is not None else None),
            "graph_related": self.graph_related,
        }


@dataclass
class Diagnosis:
    verdict: Verdict | None
    findings: list[Finding]
    stats: ScanStats
    context_n: int
    source: str
    summary: str = ""
    warnings: list[str] = field(default_factory=list)
    first_error: FirstError | None = None  # when no rule found an initiating failure

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "input": {"source": self.source, "bytes": self.stats.bytes, "lines": self.stats.lines,
                      "truncated_last_line": self.stats.truncated_last_line},
            "summary": self.summary,
            "warnings": list(self.warnings),
            "verdict": self.verdict.to_json(self.context_n) if self.verdict else None,
            "findings": [f.to_json() for f in self.findings],
            # added in denpex.diagnosis/1 as other fields were: readers of older documents find no key
            "first_error": self.first_error.to_json(self.context_n) if self.first_error is not None else None,
        }


def needs_first_error(d: Diagnosis) -> bool:
    """No rule found an initiating failure: no verdict, or one built from collateral or a launcher report."""
    return d.verdict is None or d.verdict.finding.role != "initiating"


def add_first_error(d: Diagnosis, stream: BinaryIO, matcher: Matcher, base: Attribution | None = None) -> None:
    """Scan the log (from its start) for its first error line when the rules found no initiating one."""
    if not needs_first_error(d):
        return
    from denpex.logs.first_error import scan

    set_first_error(d, scan(stream, matcher, base, d.context_n))


def set_first_error(d: Diagnosis, fe: FirstError | None) -> None:
    """The first-error pass's answer on the diagnosis, and the summary line that follows from it."""
    d.first_error = fe
    d.summary = _summary(d)


def matcher_for(book: RuleBook | None) -> Matcher:
    """The book's matcher, built once per rule book: building one costs tens of milliseconds,
    and the language server diagnoses on every change of a log document."""
    book = load_rulebook() if book is None else book
    matcher = book.derived.get("matcher")
    if not isinstance(matcher, Matcher):
        matcher = book.derived["matcher"] = Matcher(book)
    return matcher


class _Collector:
    """Aggregates hits: first occurrence and count per (rule, role, writer)."""

    def __init__(self, matcher: Matcher, context_n: int) -> None:
        self.matcher = matcher
        self.book = matcher.book
        self.context_n = context_n
        self.findings: dict[tuple[object, ...], Finding] = {}
        self.first_by_rule_role: dict[tuple[str, str], Finding] = {}
        self.contexts: dict[int, list[tuple[int, str]]] = {}  # keyed by id(Finding)
        self.timed_out_seq: dict[int, int] = {}  # rank -> SeqNum it timed out on
        self.last_enqueued: dict[int, int] = {}
        self.root_cause_ranks: list[int] = []
        self._root_cause_pending = False
        self._root_cause_line = 0
        self.phase_marks: list[tuple[int, str, str | None]] = []  # framework phase lines, in log order
        self.graph_frames: list[tuple[int, str, str]] = []  # (line, function, phase) of torch graph frames

    def lookback(self, lh: LineHit) -> int:
        """How many lines before a first finding its context keeps."""
        return max(self.context_n, FRAME_LOOKBACK)

    def on_hit(self, lh: LineHit, window: Window, start: int) -> None:
        back = 0  # lines at the end of the context that belong to the reported line (it starts above)
        if lh.hits or self.matcher.missed:
            lh, back = line_repair.repair(self, lh, window, start)
        text = lh.text
        if "SeqNum=" in text and "imeout" in text and lh.who.rank is not None:
            m = _SEQ_TIMEOUT.search(text)
            if m:
                self.timed_out_seq.setdefault(lh.who.rank, int(m.group(1)))
        if "nqueued" in text and lh.who.rank is not None:
            m = _LAST_ENQ.search(text)
            if m:
                self.last_enqueued[lh.who.rank] = int(m.group(1))
        if "Root Cause (first observed failure)" in text:
            self._root_cause_pending = True
            self._root_cause_line = lh.line
        elif self._root_cause_pending and "(local_rank:" in text:
            m = _ROOT_CAUSE_RANK.match(strip_prefixes(text))
            if m and lh.line - self._root_cause_line < 10:
                self.root_cause_ranks.append(int(m.group(1)))
                self._root_cause_pending = False
        if "graph" in text and '", line ' in text:
            m = _GRAPH_FRAME.search(text)
            if m is not None and len(self.graph_frames) < MAX_CONTEXTS:
                where = phase.frame_phase(m.group(1))
                if where is not None:
                    self.graph_frames.append((lh.line, m.group(1), where))
        if "aptur" in text:  # cheap guard before the phase-line literals
            mark = phase.phase_line(text)
            if mark is not None and (not self.phase_marks or self.phase_marks[-1][0] != lh.line):
                self.phase_marks.append((lh.line, mark[0], mark[1]))
        new_first = False
        for hit in lh.hits:
            sig = hit.signature
            key: tuple[object, ...] = (sig.rule_id, sig.role, sig.index, *lh.who.key())
            if hit.repair is not None and hit.repair.kind == "interleaved":
                key = (*key, lh.line)  # its own finding: the what() of interleaved writers must reach its wrapper
            f = self.findings.get(key)
            if f is None:
                rule = self.book.get(sig.rule_id)
                f = Finding(sig.rule_id, sig.role, lh.line, text, lh.who, sig.variant,
                            span=hit.end - hit.start, entry=hit.entry,
                            generic=rule is not None and rule.generic, wrapper=sig.wrapper, repair=hit.repair)
                self.findings[key] = f
                if f.generic:
                    f.said = _said(hit, text)
                if (sig.rule_id, sig.role) not in self.first_by_rule_role:
                    self.first_by_rule_role[(sig.rule_id, sig.role)] = f
                    new_first = True
            else:
                if f.line != lh.line:
                    f.count += 1
                    if f.generic and lh.line - f.line <= events.EVENT_LINES:
                        f.near_said.setdefault(lh.line, _said(hit, text))
            if lh.who.rank is not None:
                f.ranks.add(lh.who.rank)
        if new_first and len(self.contexts) < MAX_CONTEXTS:
            lines = window.lines_before(start, self.lookback(lh) + back)
            if back:
                lines = lines[:-back]
            for hit in lh.hits:
                f0 = self.first_by_rule_role.get((hit.signature.rule_id, hit.signature.role))
                if f0 is not None and f0.line == lh.line and id(f0) not in self.contexts:
                    self.contexts[id(f0)] = lines


def _said(hit: Hit, text: str) -> str:
    """What one hit reports: its status code's name, else the text it matched."""
    return hit.entry.name if hit.entry is not None else text[hit.start : hit.end]


def _collateral_aborts(c: _Collector, initiating: list[Finding]) -> list[Finding]:
    """Abort reports that only follow another failure (events.abort_is_collateral): their role becomes
    collateral, so the verdict falls to the earlier error, or says the initiating one is not in the log."""
    out = []
    for f in initiating:
        if not events.abort_report(f):
            continue
        why = events.abort_is_collateral(f, c.contexts.get(id(f), []))
        if why is not None:
            f.role = "collateral"
            f.variant = f"{f.variant}; collateral: {why}" if f.variant else f"collateral: {why}"
            out.append(f)
    return out


def _scan(stream: BinaryIO, matcher: Matcher, context_n: int,
          progress: Callable[[int], None] | None) -> tuple[_Collector, ScanStats]:
    collector = _Collector(matcher, context_n)
    stats = ScanStats()
    for _lh in iter_line_hits(stream, matcher, stats, collector.on_hit, progress):
        pass  # the collector sees every hit through on_hit
    return collector, stats


def diagnose_stream(
    stream: BinaryIO,
    book: RuleBook | None = None,
    context: int = 100,
    source: str = "<stream>",
    progress: Callable[[int], None] | None = None,
    head: bytes | None = None,
) -> Diagnosis:
    matcher = matcher_for(book)
    start = stream.tell() if _seekable(stream) else None
    collector, stats = _scan(stream, matcher, context, progress)
    d = _decide(collector, stats, context, source, head or b"")
    if start is not None and needs_first_error(d):
        stream.seek(start)
        add_first_error(d, stream, matcher)
    return d


def _seekable(stream: BinaryIO) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def diagnose_text(text: str, book: RuleBook | None = None, context: int = 100) -> Diagnosis:
    """Diagnose a string (an editor selection, a pasted traceback)."""
    data = text.encode("utf-8", errors="surrogatepass")
    return diagnose_stream(io.BytesIO(data), book, context, "<text>", head=data[:65536])


# --- the decision -----------------------------------------------------------------------------


def _decide(c: _Collector, stats: ScanStats, context_n: int, source: str, head: bytes) -> Diagnosis:
    book = c.book
    promoted: list[Finding] = []
    findings = events.specific_first(sorted(c.findings.values(), key=lambda f: (f.line, f.generic, -f.span, f.rule)),
                               promoted)
    diag = Diagnosis(None, findings, stats, context_n, source)
    if stats.binary_bytes > 64:
        diag.warnings.append(
            f"input looks binary ({stats.binary_bytes} non-text bytes in the first 64 KiB); "
            "only text lines were searched"
        )
    if stats.truncated_last_line:
        diag.warnings.append("the input ends mid-line (truncated or still being written)")
    # a specific report that a broad initiating line stood for (the what() after 'terminate called ...')
    # competes as an initiating report of that event
    initiating = sorted([f for f in findings if f.role == "initiating"] + promoted,
                        key=lambda f: (f.line, f.generic, -f.span, f.rule))
    demoted = _collateral_aborts(c, initiating)
    initiating = [f for f in initiating if all(f is not d for d in demoted)]
    collateral = [f for f in findings if f.role == "collateral"]
    context_f = [f for f in findings if f.role == "context"]

    verdict: Verdict | None = None
    if initiating:
        first, wrapped = events.unwrap(initiating[0], findings)
        first = events.device_report(first, initiating)
        verdict = _verdict_for(c, book, first, "high" if first.role == "initiating" else "low")
        wrapped = wrapped or first.wrapped_by
        if wrapped is not None:
            verdict.notes.append(
                f"line {wrapped.line} ({wrapped.rule}) only wraps this message; the line after it names the failure."
            )
        others = {f.rule for f in initiating if f.rule != first.rule}
        for rid in sorted(others, key=lambda r: min(f.line for f in initiating if f.rule == r)):
            f = next(x for x in initiating if x.rule == rid)
            rule = book.get(rid)
            if rule is None:
                continue
            verdict.alternatives.append({
                "rule": rid, "title": rule.title, "line": f.line, "rank": f.who.rank,
                "why_not_first": "appears later in the log than the verdict line",
            })
        if collateral:
            folded = _fold(collateral)
            verdict.notes.append("collateral after the first failure: " + "; ".join(folded))
    elif collateral:
        first, wrapped = events.unwrap(collateral[0], findings)
        verdict = _verdict_for(c, book, first, "low")
        verdict.notes.insert(
            0,
            "Only collateral reports were found: the initiating error is not in this text. "
            "The evidence is incomplete; look for an earlier error on another rank, thread or log file.",
        )
        if wrapped is not None:
            verdict.notes.append(
                f"line {wrapped.line} ({wrapped.rule}) only wraps this message; the line after it names the failure."
            )
        suspects = _suspect_ranks(c)
        if suspects:
            verdict.suspects = suspects
            seq = min(c.timed_out_seq.values())
            verdict.notes.append(
                f"NCCL sequence numbers: ranks {_ranges(suspects)} did not get past enqueuing collective "
                f"SeqNum={seq} that the others timed out on; look at what they were doing."
            )
    else:
        hard = [f for f in context_f if (r := book.get(f.rule)) is not None and r.severity == "error"]
        if hard:
            verdict = _verdict_for(c, book, hard[0], "low")
            verdict.notes.insert(0, "Only a launcher or wrapper report was found; it names no cause.")

    if verdict is not None:
        line_repair.cap_confidence(verdict)
        events.explain_phase(verdict)
        _writer_from_traceback_header(verdict)
        _infer_missing_rank(verdict, c)
        _add_weak_hints(verdict, c)
        verdict.fingerprint = _fingerprint(verdict, context_f)
        texts = [t for _n, t in verdict.context] + [fr.path for fr in verdict.frames]
        verdict.frameworks = detect_frameworks(texts, head)  # = frameworks.detect([head text, *texts])
        if events.asynchronous(verdict):
            verdict.notes.append(
                "CUDA reports this error asynchronously: the frame shown is where CUDA noticed it, "
                "not where it happened. Re-run with CUDA_LAUNCH_BLOCKING=1 (or "
                "torch.cuda.set_sync_debug_mode('error'), or compute-sanitizer python train.py) "
                "to make it report at the faulting call."
            )
    diag.verdict = verdict
    diag.summary = _summary(diag)
    return diag


def _verdict_for(c: _Collector, book: RuleBook, f: Finding, confidence: str) -> Verdict:
    rule = book.get(f.rule)
    assert rule is not None
    lines = c.contexts.get(id(f), [])
    frames = frames_before([*lines, (f.line, f.text)], f.who.rank, f.who.local_rank) if lines else []
    v = Verdict(rule, f, confidence, lines, frames, [])
    v.phase = (phase.from_frames(frames) or events.phase_later_in_event(c, f)
               or phase.from_lines(c.phase_marks, f.line) or phase.from_source(frames)
               or events.implied_phase(book, rule))
    refined = _refine(book, rule, frames, lines, v.phase)
    if refined is not None:
        v.via = rule.id
        v.rule = refined
        v._parent = rule
    if confidence == "high" and not frames and not lines:
        v.confidence = "medium"
    return v


@cache
def _refine_regex(pattern: str) -> regex.Pattern[str]:
    return regex.compile(pattern)


def _refine(book: RuleBook, parent: Rule, frames: list[Frame],
            lines: list[tuple[int, str]], where: phase.PhaseEvidence | None = None) -> Rule | None:
    """A more specific rule for a parent's verdict, from the failing source line, nearby text,
    the frames of its traceback or the phase the log puts it in."""
    frame = innermost_user_frame(frames)
    code = frame.code if frame is not None else ""
    recent = "\n".join(t for _n, t in lines[-60:])
    frame_names = "\n".join(f"{fr.path}:{fr.function}" for fr in frames)
    best: Rule | None = None
    for rule in book.rules:
        if parent.id not in rule.refine_parents:
            continue
        hit = False
        try:
            if rule.refine_code is not None and code:
                hit = _refine_regex(rule.refine_code).search(code, timeout=0.05) is not None
            if not hit and rule.refine_context is not None and recent:
                hit = _refine_regex(rule.refine_context).search(recent, timeout=0.05) is not None
            if not hit and rule.refine_frames is not None and frame_names:
                hit = _refine_regex(rule.refine_frames).search(frame_names, timeout=0.05) is not None
            if not hit and rule.refine_phase is not None and where is not None:
                hit = rule.refine_phase == where.phase
        except TimeoutError:
            hit = False
        if hit and (best is None or rule.refine_priority > best.refine_priority):
            best = rule
    return best


def _fingerprint(v: Verdict, context_f: list[Finding]) -> Finding | None:
    """The first related warning before the verdict line, preferring the verdict's own writer.

    Related means a context report of the verdict's rule, of the rule it was refined from, or
    of a rule that rule can be refined from; failing that, any earlier context report.
    """
    before = [f for f in context_f if f.line < v.finding.line]
    if not before:
        return None
    related_ids = {v.rule.id, *(v.rule.refine_parents)}
    if v.via:
        related_ids.add(v.via)
    related = [f for f in before if f.rule in related_ids]
    pool = related or before
    same = [f for f in pool if f.who.rank == v.finding.who.rank]
    return (same or pool)[0]


def _add_weak_hints(v: Verdict, c: _Collector) -> None:
    if not c.root_cause_ranks:
        return
    blamed = c.root_cause_ranks[0]
    vr = v.finding.who.rank if v.finding.who.rank is not None else v.finding.who.local_rank
    if vr is not None and blamed != vr:
        v.alternatives.append({
            "rule": "torchrun-child-failed", "title": "torchrun's Root Cause table", "line": None,
            "rank": blamed,
            "why_not_first": (
                f"torchrun names rank {blamed} as Root Cause by exit time, but rank {vr} failed "
                "first in the log; a rank killed by the watchdog or a signal is usually a victim"
            ),
        })
        v.notes.append(
            f"torchrun's 'Root Cause (first observed failure)' names rank {blamed}; that is a weak hint "
            f"(it orders by detection time). The first failure in the log is on rank {vr}."
        )


def _writer_from_traceback_header(v: Verdict) -> None:
    """An exception line with no prefix, under a traceback whose first line has one, was written by
    that line's writer: SGLang logs 'Scheduler hit an exception: Traceback ...' as one record, under
    its [time TPn] prefix on the first line only. The first line must sit right above the first frame."""
    who = v.finding.who
    if not v.frames or (not who.weak and (who.rank is not None or who.local_rank is not None or who.process)):
        return
    first = v.frames[0].log_line
    above = next((t for n, t in reversed(v.context) if n == first - 1), None)
    if above is None or "Traceback (most recent call last)" not in above:
        return
    head = attribute(above)
    if head.rank is None and head.local_rank is None and head.process is None:
        return
    v.finding.who = Attribution(
        rank=head.rank, local_rank=head.local_rank, node=head.node or who.node, process=head.process,
        device=head.device if head.device is not None else who.device, weak=head.weak,
        evidence=[f"{e}, on the traceback's first line ({first - 1})" for e in head.evidence],
    )


def _infer_missing_rank(v: Verdict, c: _Collector) -> None:
    """An unprefixed traceback (traceback.print_exc(), a bare stderr) gets the rank that the NCCL
    sequence numbers single out: the one rank that never enqueued the collective the others hung on."""
    who = v.finding.who
    if who.rank is not None or who.local_rank is not None:
        return
    suspects = _suspect_ranks(c)
    if len(suspects) != 1:
        return
    seq = min(c.timed_out_seq.values())
    rank = suspects[0]
    v.finding.who = Attribution(
        rank=rank, node=who.node, process=who.process, device=who.device,
        evidence=[*who.evidence,
                  f"inferred: rank {rank}'s last enqueued NCCL work ({c.last_enqueued[rank]}) is below "
                  f"SeqNum={seq}, which the other ranks timed out on"],
    )
    v.suspects = suspects
    v.notes.append(
        f"The failing traceback carries no rank prefix; rank {rank} is inferred from the NCCL sequence "
        f"numbers (it never enqueued collective {seq}). Print tracebacks through the logger torch "
        "installs (or run torchrun with --tee 3) to get a prefix."
    )


def _suspect_ranks(c: _Collector) -> list[int]:
    if not c.timed_out_seq:
        return []
    seq = min(c.timed_out_seq.values())
    return sorted(r for r, last in c.last_enqueued.items() if last < seq)


def _fold(findings: list[Finding]) -> list[str]:
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule, []).append(f)
    out = []
    for rule, fs in by_rule.items():
        ranks = sorted({r for f in fs for r in f.ranks})
        count = sum(f.count for f in fs)
        who = (f"rank {ranks[0]}: " if len(ranks) == 1 else f"ranks {_ranges(ranks)}: ") if ranks else ""
        out.append(f"{who}{count}x {rule}")
    return out


def _ranges(nums: list[int]) -> str:
    if not nums:
        return ""
    out: list[str] = []
    start = prev = nums[0]
    for n in nums[1:]:
        if n == prev + 1:
            prev = n
            continue
        out.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = n
    out.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(out)


def _summary(d: Diagnosis) -> str:
    v = d.verdict
    if v is None and d.first_error is not None:
        from denpex.logs.first_error import summary_line

        return summary_line(d.first_error.to_json(0))
    if v is None:
        if d.findings:
            return "No failure diagnosed; related warnings were found (see findings)."
        return "No known CUDA-graph failure signature found."
    who = v.finding.who.label()
    return f"{v.rule.title} — first at line {v.finding.line} ({who}); confidence {v.confidence}."

