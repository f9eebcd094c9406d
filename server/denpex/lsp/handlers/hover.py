"""`textDocument/hover`: the rule behind each diagnostic under the cursor, the rules a
`# denpex: ignore[...]` comment names, a capture opener's summary, a log verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp import hovers
from denpex.lsp.documents import DocState, Kind, contains, from_lsp_position, path_of
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.TEXT_DOCUMENT_HOVER


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.HoverParams) -> types.Hover | None:
    svc = ls.service
    uri = params.text_document.uri
    st = svc.documents.get(uri)
    doc = svc.text_document(uri)
    if st is None or doc is None or st.kind is Kind.OTHER:
        return None
    lines = doc.lines
    at = from_lsp_position(lines, doc.position_codec, params.position)
    if at is None:
        return None
    svc.ensure_current(st)
    line, col = at
    sections: list[str] = []
    rng: types.Range | None = None
    seen: set[str] = set()
    for d in [*st.diagnostics, *svc.traceback_diags.get(uri, [])]:
        if not contains(d.range, params.position):
            continue
        data = d.data if isinstance(d.data, dict) else {}
        rule_id = str(data.get("rule", ""))
        key = f"{rule_id}:{data.get('role', '')}"
        if key in seen:
            continue
        seen.add(key)
        rng = rng or d.range
        if data.get("role") == "verdict" and st.log_diagnosis is not None:
            sections.append(_verdict_markdown(ls, st))
            continue
        rule = svc.rule(rule_id)
        sections.append(hovers.rule_markdown(rule, d.message) if rule is not None
                        else hovers.fallback_markdown(str(d.code), rule_id, d.message))
        sections.append(hovers.call_path_markdown(data.get("capture_site"), data.get("call_path")))
    if st.kind is Kind.PYTHON:
        text_line = lines[line] if line < len(lines) else ""
        for rid in hovers.suppression_ids_at(text_line, col):
            rule = svc.rule(rid)
            if rule is not None and rule.id not in seen:
                seen.add(rule.id)
                sections.append(hovers.rule_markdown(rule))
        for region in svc.analyzer.regions(doc.source, path_of(uri) or uri, st.findings, line):
            if region.start_col <= col <= region.end_col:
                rules = {r: x for r in {f.rule for f in region.findings} if (x := svc.rule(r)) is not None}
                sections.append(hovers.region_markdown(region, rules))
    if not sections:
        return None
    value = hovers.join_sections(sections)
    if svc.caps.hover_markdown:
        contents = types.MarkupContent(kind=types.MarkupKind.Markdown, value=value)
    else:
        contents = types.MarkupContent(kind=types.MarkupKind.PlainText, value=hovers.to_plaintext(value))
    return types.Hover(contents=contents, range=rng)


def _verdict_markdown(ls: DenpexLanguageServer, st: DocState) -> str:
    from denpex.logs.render import render_markdown
    from denpex.lsp import logs

    doc = ls.service.text_document(st.uri)
    if doc is None:
        return ""
    return render_markdown(logs.diagnose(doc.source, ls.service.book))
