"""Hover text: a rule's explanation, a capture region's summary, a log line's diagnosis."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from denpex.lsp.analysis import RegionSummary
from denpex.rulebook import Rule, render

_SUPPRESS = re.compile(r"#\s*denpex:\s*ignore\[(?P<ids>[^\]]*)\]")

KIND_TITLE = {
    "graph": "`torch.cuda.graph` capture",
    "capture_begin": "`capture_begin()` … `capture_end()` capture",
    "graphed_callables": "`torch.cuda.make_graphed_callables` capture",
    "compile": "`torch.compile` with CUDA graphs (reduce-overhead)",
    "wrapper": "capture wrapper",
}


def rule_markdown(rule: Rule, message: str | None = None) -> str:
    """The rule as `denpex explain` renders it, in its short form."""
    return render.rule_markdown(rule, message=message, full=False)


def call_path_markdown(site: object, steps: object) -> str:
    """Why a line runs under capture: the capture site, each call followed, then the line (from a diagnostic's
    data; empty when the line is in the capture itself)."""
    if not isinstance(steps, list) or not steps:
        return ""
    parts = ["**Runs under capture through:**", ""]
    if isinstance(site, list) and len(site) == 2:
        parts.append(f"1. capture opened at `{Path(str(site[0])).name}:{int(site[1]) + 1}`")
    for st in steps:
        if isinstance(st, list) and len(st) == 4:
            parts.append(f"1. `{Path(str(st[0])).name}:{int(st[1]) + 1}` calls `{st[3]}`")
    parts.append("1. this line")
    return "\n".join(parts)


def fallback_markdown(code: str, rule_id: str, message: str) -> str:
    return f"### {code} `{rule_id}`\n\n{message}"


def region_markdown(region: RegionSummary, rules: dict[str, Rule]) -> str:
    title = KIND_TITLE.get(region.kind, "CUDA-graph capture")
    parts = [f"### Denpex: {title}", ""]
    if region.callees:
        parts += ["**Captures calls into:** " + ", ".join(f"`{c}`" for c in region.callees), ""]
    if region.findings:
        parts += [f"**Hazards found ({len(region.findings)}):**", ""]
        for f in region.findings:
            where = f"line {f.start_line + 1}"
            if f.path and region.findings and f.capture_site and f.path != f.capture_site.path:
                where = f"{f.path}:{f.start_line + 1}"
            via = f" (via {' → '.join(f.via)})" if f.via else ""
            r = rules.get(f.rule)
            title = r.title if r is not None else f.message
            parts.append(f"- {f.code} at {where}{via}: {title}")
    else:
        parts.append("No capture hazards found in this region.")
    return "\n".join(parts)


def suppression_ids_at(line: str, col: int) -> list[str]:
    """Rule ids/codes inside a `# denpex: ignore[...]` comment when `col` is on it."""
    for m in _SUPPRESS.finditer(line):
        if m.start() <= col <= m.end():
            return [s.strip() for s in m.group("ids").split(",") if s.strip()]
    return []


def join_sections(sections: Sequence[str]) -> str:
    return "\n\n---\n\n".join(s for s in sections if s)


def to_plaintext(markdown: str) -> str:
    text = re.sub(r"^#+\s*", "", markdown, flags=re.M)
    return text.replace("**", "").replace("```sh\n", "").replace("```", "").replace("`", "")
