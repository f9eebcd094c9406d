"""One failure event over several lines, and what a verdict says about it.

A broad family (a table of CUDA, cuBLAS or NCCL codes, a crash line) never takes a line or an event from a
specific rule; a wrapper line ("terminate called after throwing ...") gives way to the detail line after it;
the phase (capture, replay) comes from the frames of the event; and the verdict says whether the failure is a
CUDA-graph bug, and what capture changes when it happened there.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

import regex

from denpex.logs import phase
from denpex.rulebook import Rule, RuleBook

if TYPE_CHECKING:
    from denpex.logs.diagnose import Finding, Verdict, _Collector

EVENT_LINES = 3  # lines after a report that still belong to the same event (a wrapper's detail lines)
EVENT_SPAN = 400  # lines after a verdict in which its own later reports (the exception after a device assert) are looked for


@cache
def _regex(pattern: str) -> regex.Pattern[str]:
    return regex.compile(pattern)


def phase_later_in_event(c: _Collector, f: Finding) -> phase.PhaseEvidence | None:
    """A graph frame (torch/cuda/graphs.py replay, capture_end, __exit__) in a traceback of the same event
    after the verdict line: the 'CUDA error' report of a device assert printed before it, or the chained
    capture_end traceback after a failing call inside a capture."""
    end = f.line
    for g in c.findings.values():
        if (f.line < g.line <= f.line + EVENT_SPAN and (g.rule == f.rule or g.role == "collateral")
                and (g.who.key() == f.who.key() or g.who.rank is None)):
            end = max(end, g.line)
    for line, name, where in c.graph_frames:
        if f.line < line <= end:
            return phase.PhaseEvidence(where, f"frame {name} in graphs.py (line {line}, the same event's traceback)", line)
    return None


def implied_phase(book: RuleBook, rule: Rule) -> phase.PhaseEvidence | None:
    for r in (rule, *(p for p in (book.get(x) for x in rule.refine_parents) if p is not None)):
        if r.implies_phase:
            return phase.PhaseEvidence(r.implies_phase, f"{r.id} is raised only during {r.implies_phase}")
    return None


def asynchronous(v: Verdict) -> bool:
    """A table rule is asynchronous only for the codes of kernel faults; others follow the rule."""
    entry = v.finding.entry
    if entry is not None and v.rule.codes and entry in v.rule.codes:
        return entry.asynchronous
    return v.rule.asynchronous


def specific_first(findings: list[Finding], promoted: list[Finding] | None = None) -> list[Finding]:
    """Drop a broad family's finding where a specific rule names the same event: on the same line, or
    within the next EVENT_LINES lines of the same writer (PyTorch's 'NCCL error in: ...' is followed by
    'Last error:' and NCCL's own text, which a specific rule may know). Generic tables of CUDA, cuBLAS or
    NCCL codes must not take a verdict from a CUDA-graph rule; the status code the dropped finding named
    goes to the specific finding."""
    by_line: dict[int, list[Finding]] = {}
    for f in findings:
        if not f.generic:
            by_line.setdefault(f.line, []).append(f)
    out = []
    for f in findings:
        if not f.generic:
            out.append(f)
            continue
        key = f.who.key()
        mates = [m for m in by_line.get(f.line, ()) if m.who.key() == key]
        for later in range(f.line + 1, f.line + EVENT_LINES + 1):
            if mates:
                break
            # an unprefixed wrapper line ("terminate called ...") and its detail line ("what(): [Rank 0] ...")
            # are one writer even though only the second names a rank
            if f.near_said.get(later, f.said) != f.said:
                break  # the broad rule reports something else there: a new error (a sticky 700 after a 1), not this one's detail
            mates = [m for m in by_line.get(later, ())
                     if m.role != "context" and (m.who.key() == key or (f.wrapper and unattributed(f)))]
        if not mates:
            out.append(f)
            continue
        for m in mates[:1]:
            if m.entry is None and f.entry is not None:
                m.entry = f.entry
            if (promoted is not None and f.wrapper and f.role == "initiating" and m.line > f.line
                    and m.role != "initiating" and not m.wrapper and m not in promoted):
                promoted.append(m)
                m.wrapped_by = f
    return out


DEVICE_VARIANT = "device printf"  # the variant of a rule's signature for a kernel's own printf
DEVICE_LINES = 50  # lines after a host's report of a kernel's failure in which the kernel's own printf is looked for


def device_report(first: Finding, initiating: list[Finding]) -> Finding:
    """The kernel's own report of a failure (its assertion printf: 'block: [..], thread: [..] Assertion ...
    failed.') over the host's report of it ('device-side assert triggered'), which the runtime can raise, and
    the program print, before the device's printf buffer is flushed at the next synchronisation."""
    if first.variant.startswith(DEVICE_VARIANT):
        return first
    for f in initiating:
        if (f.rule == first.rule and first.line < f.line <= first.line + DEVICE_LINES
                and f.variant.startswith(DEVICE_VARIANT)
                and (f.who.key() == first.who.key() or unattributed(f) or unattributed(first))):
            return f
    return first


# A crash handler's own lines: native frames (Open MPI's "[host:pid] [ 3] lib(+0x..)", glog's "    @ 0x..",
# gdb's "#3 ", UCX's " 3 0x..", c10's "frame #3:", Open MPI's footer); _HANDLER: the headers that open a report.
_FRAME = re.compile(r"^\s|^\[[^\]\s]{1,80}:\d{1,8}\] (?:\[\s?\d{1,4}\]|\*\*\* End of error message \*\*\*)|^#\d{1,4}\s|^frame #\d|^\d{1,4} 0x[0-9a-f]{4,}")
_HANDLER = re.compile(r"\*\*\* (?:Process received signal|Check failure stack trace:?) \*\*\*"
                      r"|^\[[^\]\s]{1,80}:\d{1,8}\] (?:Signal(?: code)?:|Failing at address)|^={4,} ?backtrace|^={8,}$"
                      r"|^(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):|^Stack \(most recent call first\):"
                      r"|^Fatal Python error: |^Extension modules: ")


def abort_report(f: Finding) -> bool:
    """An abort (SIGABRT: 'Aborted (core dumped)'): the process stopped itself after something else failed."""
    return f.generic and f.entry is not None and f.entry.name == "SIGABRT"


def abort_is_collateral(f: Finding, before: list[tuple[int, str]]) -> str | None:
    """Why an abort report is only collateral, or None when it is the first thing the log says failed.

    An abort is initiating only when nothing earlier in its event says what failed. Walking back from it over
    the crash handlers' frames and headers: a line that the first-error pass takes as an error (a failed check,
    an exception, an error record) is what failed; an ordinary line ends the event (nothing said it); and a log
    that starts inside the handler's frames, before any of its headers, has lost the event's beginning."""
    from denpex.logs.first_error import classify, collateral_reason, message_of

    header = False
    for n, text in reversed(before):
        if n >= f.line:
            continue
        if not text.strip() or _FRAME.match(text):
            continue
        if _HANDLER.search(text):
            header = True
            continue
        line = message_of(text)
        kind = classify(line)
        if kind is None:
            return None
        if collateral_reason(line.message, []) is None:
            return f"line {n} says what failed before the abort"
        header = True  # another report of the same crash (terminate called ..., a signal line): keep walking
    starts_log = (before[0][0] if before else f.line) == 1
    if starts_log and not header and before:
        return "the log starts inside the crash handler's frames: what failed is above this excerpt"
    return None


def unattributed(f: Finding) -> bool:
    return f.who.rank is None and f.who.local_rank is None and f.who.process is None


def unwrap(first: Finding, findings: list[Finding]) -> tuple[Finding, Finding | None]:
    """Two lines of one event: 'terminate called after throwing ...' (a wrapper) and the 'what(): ...'
    line after it; the more specific one, the second, names the failure."""
    if not first.wrapper:
        return first, None
    for f in findings:
        if f.line <= first.line or f.wrapper:
            continue
        if f.line > first.line + 3:
            break
        if f.who.key() == first.who.key() or f.who.rank is None or unattributed(first):
            return f, first
    return first, None


def apply_hints(v: Verdict) -> None:
    for hint in (*v.rule.hints, *(v.parent.hints if v.parent is not None else ())):
        try:
            m = _regex(hint.regex).search(v.finding.text, timeout=0.05)
        except TimeoutError:
            m = None
        if m is None:
            continue
        note = hint.note
        for i, g in enumerate(m.groups(), start=1):
            note = note.replace("{" + str(i) + "}", g or "")
        v.notes.append(note)
        if hint.graph_related is not None and v.related_override is None:
            v.related_override = hint.graph_related


def explain_phase(v: Verdict) -> None:
    """Say whether the verdict is a CUDA-graph bug, and what capture changes when it happened there."""
    apply_hints(v)
    if v.phase is not None and v.phase.phase == "capture":
        parent = v.parent
        text = v.rule.in_capture or (parent.in_capture if parent is not None else "")
        if text:
            v.notes.insert(0, "During capture: " + text)
    related = v.graph_related
    if related == "no":
        v.notes.insert(0, "Adjacent failure: this is not a CUDA-graph bug; its own fix is below.")
    elif related == "depends":
        v.notes.insert(
            0,
            "Adjacent failure unless it happened in a CUDA-graph capture or replay, which this log "
            "does not show; its own fix is below.",
        )
