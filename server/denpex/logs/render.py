"""Render a Diagnosis for a person (text, Markdown) or a program (JSON)."""

from __future__ import annotations

import json
import textwrap

from denpex.logs.diagnose import Diagnosis, Finding, Verdict, _fold
from denpex.logs.report import first_error_markdown, first_error_text

_COLOURS = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2", "cyan": "36"}


def _c(text: str, colour: str, on: bool) -> str:
    return f"\x1b[{_COLOURS[colour]}m{text}\x1b[0m" if on else text


def render_json(d: Diagnosis) -> str:
    return json.dumps(d.to_json(), indent=2, ensure_ascii=False)


def _who(f: Finding) -> str:
    label = f.who.label()
    return f"{label} [{'; '.join(f.who.evidence)}]" if f.who.evidence else label


_RELATED = {
    "yes": "CUDA-graph failure",
    "no": "adjacent failure (not a CUDA-graph bug)",
    "depends": "adjacent failure unless in a capture or replay",
}


def _refined_by(v: Verdict) -> str:
    r = v.rule
    if r.refine_phase is not None and v.phase is not None and v.phase.phase == r.refine_phase:
        return f"because it happened during {r.refine_phase}"
    if r.refine_code is not None:
        return "by the failing source line"
    if r.refine_frames is not None:
        return "by the frames of its traceback"
    return "by the lines before it"


def _status_lines(v: Verdict) -> list[str]:
    """The status code the line named, the phase, and whether it is a CUDA-graph failure."""
    out = []
    e = v.finding.entry
    if e is not None:
        meaning = f" — {e.meaning}" if e.meaning else ""
        out.append(f"code: {e.label()}{meaning}")
    if v.phase is not None:
        out.append(f"phase: {v.phase.phase} ({v.phase.evidence})")
    if v.graph_related != "yes" or v.rule.graph_related != "yes":
        out.append(f"kind: {_RELATED.get(v.graph_related, v.graph_related)}")
    return out


def render_text(d: Diagnosis, colour: bool = False, context_lines: int = 8) -> str:
    out: list[str] = []
    for w in d.warnings:
        out.append(_c(f"warning: {w}", "yellow", colour))
    v = d.verdict
    fe = d.first_error.to_json(d.context_n) if d.first_error is not None else None
    if v is None:
        out.append(_c("No known CUDA-graph failure signature found." if fe else d.summary, "green", colour))
        if fe:
            out.extend(first_error_text(fe, colour, context_lines))
        for f in d.findings:
            out.append(f"  line {f.line}: {f.rule} ({f.role}) {f.text.strip()[:160]}")
        return "\n".join(out) + "\n"
    f = v.finding
    out.append(_c(f"✖ {v.rule.title}", "red", colour) + f"  [{v.rule.id} / {v.rule.code}]")
    out.append(f"  first failure: line {f.line}, {_who(f)}; confidence {v.confidence}")
    if v.via:
        out.append(f"  (refined from {v.via} {_refined_by(v)})")
    out.append(f"  {_c('>', 'bold', colour)} {f.text.strip()[:300]}")
    for line in _status_lines(v):
        out.append(f"  {line}")
    user_frames = [fr for fr in v.frames if not fr.is_library]
    if user_frames:
        out.append("  where:")
        for fr in user_frames[-4:]:
            out.append(f"    {fr.path}:{fr.line} in {fr.function}: {fr.code}")
    for note in v.notes:
        out.extend(textwrap.wrap(note, 100, initial_indent="  note: ", subsequent_indent="        "))
    if v.fingerprint is not None:
        fp = v.fingerprint
        out.append(f"  first related warning: line {fp.line} ({fp.who.label()}): {fp.text.strip()[:200]}")
    if v.first_divergence is not None:
        out.append(f"  first line the healthy run does not have: line {v.first_divergence[0]}: "
                   f"{v.first_divergence[1].strip()[:200]}")
    out.append(_c("why:", "bold", colour))
    out.extend(textwrap.wrap(v.rule.root_cause, 100, initial_indent="  ", subsequent_indent="  "))
    out.append(_c("fix:", "bold", colour))
    for line in v.fix_text().splitlines():
        out.extend(textwrap.wrap(line, 100, initial_indent="  ", subsequent_indent="  "))
    if v.rule.eager_fallback:
        out.append(_c("eager fallback:", "bold", colour))
        out.extend(textwrap.wrap(v.rule.eager_fallback, 100, initial_indent="  ", subsequent_indent="  "))
    out.append(_c("verify:", "bold", colour))
    out.append("  " + _c(v.rule.verify_command(), "cyan", colour))
    for alt in v.alternatives:
        out.append(f"  competing: {alt['rule']} (line {alt.get('line')}, rank {alt.get('rank')}): {alt['why_not_first']}")
    if v.context and context_lines > 0:
        out.append(_c(f"context (last {min(context_lines, len(v.context))} of {len(v.context)} lines kept before it):", "dim", colour))
        for no, text in v.context[-context_lines:]:
            out.append(_c(f"  {no:>7} | {text[:200]}", "dim", colour))
    others = [x for x in d.findings if x is not f]
    if others:
        out.append(_c("other findings:", "bold", colour))
        for line in _fold([x for x in others if x.role == "collateral"]):
            out.append(f"  {line} (collateral)")
        for x in others:
            if x.role != "collateral":
                out.append(f"  line {x.line}: {x.rule} ({x.role}, {x.who.label()}) x{x.count}")
    if fe is not None and fe.get("found"):
        out.append(_c("the rules found only collateral; the first error line by its shape:", "bold", colour))
        out.extend(first_error_text(fe, colour, context_lines))
    return "\n".join(out) + "\n"


def render_markdown(d: Diagnosis) -> str:
    v = d.verdict
    out: list[str] = []
    for w in d.warnings:
        out.append(f"> **warning:** {w}\n")
    fe = d.first_error.to_json(d.context_n) if d.first_error is not None else None
    if v is None:
        out.append(f"**{d.summary}**\n")
        if fe:
            out.extend(first_error_markdown(fe))
        for f in d.findings:
            out.append(f"- line {f.line}: `{f.rule}` ({f.role})")
        return "\n".join(out) + "\n"
    f = v.finding
    out.append(f"## {v.rule.title}\n")
    out.append(f"`{v.rule.id}` ({v.rule.code}) · first failure at **line {f.line}** · "
               f"**{f.who.label()}** · confidence **{v.confidence}**\n")
    out.append(f"```\n{f.text.strip()[:500]}\n```\n")
    for line in _status_lines(v):
        out.append(f"- {line}")
    out.append("")
    user_frames = [fr for fr in v.frames if not fr.is_library]
    if user_frames:
        out.append("**Where:**\n")
        for fr in user_frames[-4:]:
            out.append(f"- `{fr.path}:{fr.line}` in `{fr.function}`: `{fr.code}`")
        out.append("")
    for note in v.notes:
        out.append(f"> {note}\n")
    if v.fingerprint is not None:
        out.append(f"**First related warning:** line {v.fingerprint.line} "
                   f"({v.fingerprint.who.label()}): `{v.fingerprint.text.strip()[:200]}`\n")
    out.append(f"### Why\n{v.rule.root_cause}\n")
    out.append(f"### Fix\n{v.fix_text()}\n")
    if v.rule.eager_fallback:
        out.append(f"### Eager fallback\n{v.rule.eager_fallback}\n")
    out.append(f"### Verify\n```sh\n{v.rule.verify_command()}\n```\n")
    if v.alternatives:
        out.append("### Competing hypotheses")
        for alt in v.alternatives:
            out.append(f"- `{alt['rule']}` (line {alt.get('line')}, rank {alt.get('rank')}): {alt['why_not_first']}")
        out.append("")
    if v.rule.checklist:
        out.append("### Checklist")
        out.extend(f"- [ ] {item}" for item in v.rule.checklist)
        out.append("")
    if fe is not None and fe.get("found"):
        out.extend(first_error_markdown(fe))
    return "\n".join(out) + "\n"
