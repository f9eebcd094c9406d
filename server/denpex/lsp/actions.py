"""Code actions: one quick fix per fix of a finding, "Disable RULE for this line", and
`source.fixAll.denpex` (safe fixes only, unless `unsafeFixes`), the last one resolved lazily
through `codeAction/resolve` when the client supports it.

Everything comes from the diagnostics' `data` (see diagnostics.py); when a client strips `data`
(Neovim 0.7 does not declare `publishDiagnostics.dataSupport`), the server's own copy of the
diagnostic with the same range and code is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lsprotocol import types

from denpex.lsp.capabilities import ClientCaps
from denpex.lsp.diagnostics import SOURCE, same_diagnostic
from denpex.lsp.settings import Settings

FIX_ALL_KIND = "source.fixAll.denpex"
FIX_ALL_TITLE = "Denpex: apply all safe fixes"


def kind_allowed(kind: str, only: Sequence[str] | None) -> bool:
    if not only:
        return True
    return any(kind == o or kind.startswith(o + ".") for o in only)


def _range(d: dict[str, Any]) -> types.Range:
    s, e = d["start"], d["end"]
    return types.Range(start=types.Position(line=int(s["line"]), character=int(s["character"])),
                       end=types.Position(line=int(e["line"]), character=int(e["character"])))


def text_edits(edits: Iterable[dict[str, Any]]) -> list[types.TextEdit]:
    return [types.TextEdit(range=_range(e["range"]), new_text=str(e["newText"])) for e in edits]


def workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit], caps: ClientCaps) -> types.WorkspaceEdit:
    if caps.document_changes:
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=list(edits),
        )])
    return types.WorkspaceEdit(changes={uri: list(edits)})


def data_of(diag: types.Diagnostic, known: Sequence[types.Diagnostic]) -> dict[str, Any] | None:
    """The fix payload of `diag`: its own `data`, else the server's copy of the same diagnostic."""
    if isinstance(diag.data, dict) and "fixes" in diag.data:
        return diag.data
    for k in known:
        if same_diagnostic(k, diag) and isinstance(k.data, dict):
            return k.data
    return None


def quick_fixes(
    uri: str,
    version: int | None,
    diagnostics: Sequence[types.Diagnostic],
    known: Sequence[types.Diagnostic],
    settings: Settings,
    caps: ClientCaps,
    only: Sequence[str] | None,
) -> list[types.CodeAction]:
    if not kind_allowed(types.CodeActionKind.QuickFix, only):
        return []
    out: list[types.CodeAction] = []
    for diag in diagnostics:
        if diag.source != SOURCE:
            continue
        data = data_of(diag, known)
        if data is None:
            continue
        code = str(data.get("code") or diag.code or "")
        if settings.fix_violation:
            for fix in data.get("fixes") or []:
                unsafe = fix.get("safety") != "safe"
                title = f"{fix['title']} ({code}{', unsafe' if unsafe else ''})"
                out.append(types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=True if (not unsafe and caps.code_action_preferred) else None,
                    edit=workspace_edit(uri, version, text_edits(fix["edits"]), caps),
                ))
        sup = data.get("suppression")
        if settings.disable_rule_comment and sup:
            out.append(types.CodeAction(
                title=f"Disable {code} for this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diag],
                edit=workspace_edit(uri, version, text_edits(sup["edits"]), caps),
            ))
    return out


def _key(e: types.TextEdit) -> tuple[int, int, int, int]:
    return (e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character)


def _overlap(a: types.TextEdit, b: types.TextEdit) -> bool:
    a0, a1, b0, b1 = _key(a)[:2], _key(a)[2:], _key(b)[:2], _key(b)[2:]
    if a0 == a1 and b0 == b1:
        return a0 == b0  # two insertions at one point: order would be ambiguous
    return (a0 < b1 and b0 < a1) or (a0 == a1 and b0 < a0 < b1) or (b0 == b1 and a0 < b0 < a1)


def fix_all_edits(known: Sequence[types.Diagnostic], settings: Settings) -> list[types.TextEdit]:
    """Non-overlapping edits of every applicable fix, first fix per finding, in document order."""
    chosen: list[types.TextEdit] = []
    for diag in sorted(known, key=lambda d: (d.range.start.line, d.range.start.character)):
        data = diag.data if isinstance(diag.data, dict) else None
        if data is None:
            continue
        for fix in data.get("fixes") or []:
            if fix.get("safety") != "safe" and not settings.unsafe_fixes:
                continue
            edits = [e for e in text_edits(fix["edits"]) if not any(
                _key(e) == _key(c) and e.new_text == c.new_text for c in chosen)]
            if any(_overlap(e, c) for e in edits for c in chosen):
                continue
            chosen.extend(edits)
            break
    return sorted(chosen, key=_key)


def fix_all_action(
    uri: str,
    version: int | None,
    known: Sequence[types.Diagnostic],
    settings: Settings,
    caps: ClientCaps,
    only: Sequence[str] | None,
) -> types.CodeAction | None:
    if not settings.fix_all or not kind_allowed(FIX_ALL_KIND, only):
        return None
    edits = fix_all_edits(known, settings)
    if not edits:
        return None
    title = FIX_ALL_TITLE if not settings.unsafe_fixes else "Denpex: apply all fixes (including unsafe)"
    exact = bool(only) and any(o == FIX_ALL_KIND or o == "source.fixAll" for o in only or ())
    if caps.code_action_resolve and not exact:
        # computed again at resolve time against the then-current findings
        return types.CodeAction(title=title, kind=FIX_ALL_KIND,
                                data={"uri": uri, "version": version, "action": "fixAll"})
    return types.CodeAction(title=title, kind=FIX_ALL_KIND, edit=workspace_edit(uri, version, edits, caps))
