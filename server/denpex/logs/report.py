"""Render a job's diagnosis document (many files, or merged summaries) for a person."""

from __future__ import annotations

import textwrap
from typing import Any

from denpex.logs.attribution import process_label

_COLOURS = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2", "cyan": "36"}



def _where(frames: list[dict[str, Any]]) -> list[str]:
    """'where:' and the last four frames in the user's code (verdicts and first-error answers alike)."""
    user = [fr for fr in frames if not fr.get("library")]
    if not user:
        return []
    return ["  where:"] + [f"    {fr['path']}:{fr['line']} in {fr['function']}: {fr['code']}" for fr in user[-4:]]

def _c(text: str, colour: str, on: bool) -> str:
    return f"\x1b[{_COLOURS[colour]}m{text}\x1b[0m" if on else text


def _wrap(text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, 100, initial_indent=indent, subsequent_indent=indent) or [indent]


def _who(v: dict[str, Any]) -> str:
    parts = []
    if v.get("rank") is not None:
        parts.append(f"rank {v['rank']}")
    elif v.get("local_rank") is not None:
        parts.append(f"local rank {v['local_rank']}")
    if v.get("node"):
        parts.append(f"node {v['node']}")
    if v.get("process"):
        parts.append(process_label(str(v["process"])))
    label = ", ".join(parts) or "unattributed"
    ev = v.get("attribution") or []
    return f"{label} [{'; '.join(ev)}]" if ev else label


def first_error_text(fe: dict[str, Any], colour: bool = False, context_lines: int = 8) -> list[str]:
    """The first error line found by its shape (a diagnosis's ``first_error``), for a person."""
    out: list[str] = []
    if not fe.get("found"):
        out.append(f"  only collateral reports: {fe.get('what')}")
        for c in fe.get("collateral", [])[:6]:
            where = f"{c['file']}:" if c.get("file") else "line "
            out.append(f"    {where}{c['line']}: {str(c['text']).strip()[:160]} ({c.get('why')})")
    else:
        out.append(_c(f"? First error, by the shape of the line: {fe.get('what')}", "yellow", colour)
                   + f"  [first-error / {fe.get('kind')}]")
        where = f"{fe['file']}:{fe['line']}" if fe.get("file") else f"line {fe['line']}"
        out.append(f"  first error: {where}, {_who(fe)}; confidence {fe.get('confidence')}")
        out.append(f"  {_c('>', 'bold', colour)} {str(fe.get('text', '')).strip()[:300]}")
        out.extend(_where(fe.get("frames", [])))
    for note in fe.get("notes", []):
        out.extend(textwrap.wrap(note, 100, initial_indent="  note: ", subsequent_indent="        "))
    for alt in fe.get("alternatives", [])[:4]:
        out.append(f"  later: {alt.get('file')}:{alt.get('line')} (rank {alt.get('rank')}): {alt['why_not_first']}")
    out.append(_c("evidence:", "bold", colour))
    for step in fe.get("evidence", []):
        out.extend(textwrap.wrap(step, 100, initial_indent="  - ", subsequent_indent="    "))
    ctx = (fe.get("context") or {}).get("lines", [])
    if fe.get("found") and ctx and context_lines > 0:
        start = fe["context"]["start_line"]
        shown = ctx[-context_lines:]
        out.append(_c(f"context (last {len(shown)} of {len(ctx)} lines kept before it):", "dim", colour))
        first_no = start + len(ctx) - len(shown)
        for i, text in enumerate(shown):
            out.append(_c(f"  {first_no + i:>7} | {str(text)[:200]}", "dim", colour))
    return out


def first_error_markdown(fe: dict[str, Any]) -> list[str]:
    if not fe.get("found"):
        out = [f"**Only collateral reports: {fe.get('what')}.**\n"]
        out.extend(f"- line {c['line']}: `{str(c['text']).strip()[:200]}` ({c.get('why')})"
                   for c in fe.get("collateral", [])[:6])
    else:
        where = f"{fe['file']}:{fe['line']}" if fe.get("file") else f"line {fe['line']}"
        out = [f"## First error, by the shape of the line ({fe.get('what')})\n",
               f"`first-error` ({fe.get('kind')}) · **{where}** · **{_who(fe)}** · confidence "
               f"**{fe.get('confidence')}**\n", f"```\n{str(fe.get('text', '')).strip()[:500]}\n```\n"]
    out.extend(f"> {note}\n" for note in fe.get("notes", []))
    out.append("### Evidence")
    out.extend(f"- {step}" for step in fe.get("evidence", []))
    out.append("")
    return out


def render_doc_text(doc: dict[str, Any], colour: bool = False, context_lines: int = 8) -> str:
    out: list[str] = []
    inp = doc.get("input", {})
    out.append(_c(f"{inp.get('files', 0)} files, {inp.get('bytes', 0):,} bytes, {inp.get('lines', 0):,} lines",
                  "dim", colour))
    for w in doc.get("warnings", []):
        out.append(_c(f"warning: {w}", "yellow", colour))
    v = doc.get("verdict")
    fe = doc.get("first_error")
    if v is None:
        out.append(_c("No known CUDA-graph failure signature found." if fe else doc.get("summary", ""), "green", colour))
        if fe:
            out.extend(first_error_text(fe, colour, context_lines))
        for f in doc.get("findings", [])[:40]:
            out.append(f"  {f.get('file')}:{f['line']}: {f['rule']} ({f['role']}) {str(f['text']).strip()[:160]}")
        return "\n".join(out) + "\n"
    out.append(_c(f"✖ {v['title']}", "red", colour) + f"  [{v['rule']} / {v.get('code')}]")
    out.append(f"  first failure: {v.get('file')}:{v['line']}, {_who(v)}; confidence {v['confidence']}")
    if v.get("via"):
        out.append(f"  (refined from {v['via']} by the failing source line)")
    out.append(f"  {_c('>', 'bold', colour)} {str(v['text']).strip()[:300]}")
    out.extend(_where(v.get("frames", [])))
    for note in v.get("notes", []):
        out.extend(textwrap.wrap(note, 100, initial_indent="  note: ", subsequent_indent="        "))
    fp = v.get("fingerprint")
    if fp:
        out.append(f"  first related warning: line {fp['line']}: {str(fp['text']).strip()[:200]}")
    out.append(_c("why:", "bold", colour))
    out.extend(_wrap(str(v.get("root_cause", ""))))
    out.append(_c("fix:", "bold", colour))
    for line in str(v.get("fix", "")).splitlines():
        out.extend(_wrap(line))
    if v.get("eager_fallback"):
        out.append(_c("eager fallback:", "bold", colour))
        out.extend(_wrap(str(v["eager_fallback"])))
    out.append(_c("verify:", "bold", colour))
    out.append("  " + _c(str(v.get("verify", "")), "cyan", colour))
    for alt in v.get("alternatives", []):
        where = f"{alt['file']}:" if alt.get("file") else "line "
        out.append(f"  competing: {alt['rule']} ({where}{alt.get('line')}, rank {alt.get('rank')}): "
                   f"{alt['why_not_first']}")
    ctx = v.get("context", {}).get("lines", [])
    if ctx and context_lines > 0:
        start = v["context"]["start_line"]
        shown = ctx[-context_lines:]
        out.append(_c(f"context (last {len(shown)} of {len(ctx)} lines kept before it):", "dim", colour))
        first_no = start + len(ctx) - len(shown)
        for i, text in enumerate(shown):
            out.append(_c(f"  {first_no + i:>7} | {str(text)[:200]}", "dim", colour))
    if fe and fe.get("found"):
        out.append(_c("the rules found only collateral; the first error line by its shape:", "bold", colour))
        out.extend(first_error_text(fe, colour, context_lines))
    return "\n".join(out) + "\n"


def render_doc_markdown(doc: dict[str, Any]) -> str:
    v = doc.get("verdict")
    out: list[str] = [f"> **warning:** {w}\n" for w in doc.get("warnings", [])]
    fe = doc.get("first_error")
    if v is None:
        out.append(f"**{doc.get('summary', '')}**\n")
        if fe:
            out.extend(first_error_markdown(fe))
        return "\n".join(out) + "\n"
    out.append(f"## {v['title']}\n")
    out.append(f"`{v['rule']}` ({v.get('code')}) · first failure at **{v.get('file')}:{v['line']}** · "
               f"**{_who(v)}** · confidence **{v['confidence']}**\n")
    out.append(f"```\n{str(v['text']).strip()[:500]}\n```\n")
    out.extend(f"> {note}\n" for note in v.get("notes", []))
    out.append(f"### Why\n{v.get('root_cause', '')}\n")
    out.append(f"### Fix\n{v.get('fix', '')}\n")
    out.append(f"### Verify\n```sh\n{v.get('verify', '')}\n```\n")
    if v.get("alternatives"):
        out.append("### Competing hypotheses")
        out.extend(f"- `{a['rule']}` ({a.get('file') or 'line'} {a.get('line')}, rank {a.get('rank')}): "
                   f"{a['why_not_first']}" for a in v["alternatives"])
        out.append("")
    if fe and fe.get("found"):
        out.extend(first_error_markdown(fe))
    return "\n".join(out) + "\n"
