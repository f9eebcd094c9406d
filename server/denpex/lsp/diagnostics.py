"""Source findings -> LSP diagnostics: filtering, severities, links, related information, data.

`Diagnostic.data` carries everything a code action needs (ruff's habit), so code actions never
re-run the analysis:

    {"rule": id, "code": code, "version": int | null,
     "fixes": [{"title", "safety", "edits": [{"range", "newText"}]}],
     "suppression": {"title", "safety", "edits": [...]} | null}
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls import uris
from pygls.workspace.position_codec import PositionCodec

from denpex.lsp.capabilities import ClientCaps
from denpex.lsp.documents import to_lsp_range
from denpex.lsp.settings import Settings
from denpex.rulebook import Rule, RuleBook
from denpex.source.model import Fix, SourceFinding, TextEdit

SOURCE = "denpex"

LSP_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def rule_link(settings: Settings, rule: Rule | None, rule_id: str, code: str) -> str | None:
    if settings.docs_url:
        return settings.docs_url.replace("{id}", rule_id).replace("{code}", code)
    if rule is not None and rule.path:
        p = Path(rule.path)
        return uris.from_fs_path(str(p.resolve())) if p.exists() else None
    return None


def edit_json(e: TextEdit, lines: Sequence[str], codec: PositionCodec) -> dict[str, Any]:
    rng = to_lsp_range(lines, codec, e.start_line, e.start_col, e.end_line, e.end_col)
    return {
        "range": {"start": {"line": rng.start.line, "character": rng.start.character},
                  "end": {"line": rng.end.line, "character": rng.end.character}},
        "newText": e.new_text,
    }


def fix_json(fix: Fix, lines: Sequence[str], codec: PositionCodec) -> dict[str, Any]:
    return {"title": fix.title, "safety": fix.safety,
            "edits": [edit_json(e, lines, codec) for e in fix.edits]}


def to_diagnostic(
    f: SourceFinding,
    *,
    lines: Sequence[str],
    codec: PositionCodec,
    caps: ClientCaps,
    settings: Settings,
    book: RuleBook | None,
    version: int | None,
) -> types.Diagnostic | None:
    """One finding as a Diagnostic; None when the settings turn it off (the analyser already ran
    with the settings' selection: this is for a finding of a rule switched off since)."""
    if not settings.config.enabled(f.rule):
        return None
    sev = settings.severity.get(f.rule, f.severity)
    if sev == "off":
        return None
    rule = book.get(f.rule) if book is not None else None
    rng = to_lsp_range(lines, codec, f.start_line, f.start_col, f.end_line, f.end_col)
    related: list[types.DiagnosticRelatedInformation] | None = None
    if caps.related_information and f.capture_site is not None:
        site = f.capture_site
        site_uri = uris.from_fs_path(site.path) or site.path
        via = f" via {' -> '.join(f.via)}" if f.via else ""
        same = site.path == f.path
        site_range = (
            to_lsp_range(lines, codec, site.line, 0, site.line, 10_000) if same
            else types.Range(start=types.Position(line=site.line, character=0),
                             end=types.Position(line=site.line, character=0))
        )
        related = [types.DiagnosticRelatedInformation(
            location=types.Location(uri=site_uri, range=site_range),
            message=f"capture opened here ({site.kind}){via}",
        )]
    link = rule_link(settings, rule, f.rule, f.code) if caps.code_description else None
    data = {
        "rule": f.rule,
        "code": f.code,
        "version": version,
        "fixes": [fix_json(x, lines, codec) for x in f.fixes],
        "suppression": fix_json(f.suppression, lines, codec) if f.suppression else None,
    }
    return types.Diagnostic(
        range=rng,
        message=f.message,
        severity=LSP_SEVERITY.get(sev, types.DiagnosticSeverity.Warning),
        code=f.code,
        code_description=types.CodeDescription(href=link) if link else None,
        source=SOURCE,
        related_information=related,
        data=data,
    )


def for_client(diags: Sequence[types.Diagnostic], caps: ClientCaps) -> list[types.Diagnostic]:
    """Drop fields the client did not declare (data) before sending; the server keeps them."""
    if caps.diagnostic_data:
        return list(diags)
    out = []
    for d in diags:
        out.append(types.Diagnostic(
            range=d.range, message=d.message, severity=d.severity, code=d.code,
            code_description=d.code_description, source=d.source, tags=d.tags,
            related_information=d.related_information,
        ))
    return out


def same_diagnostic(a: types.Diagnostic, b: types.Diagnostic) -> bool:
    return a.range == b.range and str(a.code) == str(b.code) and a.message == b.message
