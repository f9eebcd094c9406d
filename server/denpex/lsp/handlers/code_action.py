"""`textDocument/codeAction`: one quick fix per fix of a finding, "Disable RULE for this line", and
`source.fixAll.denpex` (see `denpex.lsp.actions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp import actions
from denpex.lsp.documents import Kind
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.TEXT_DOCUMENT_CODE_ACTION
OPTIONS = types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL_KIND],
                                  resolve_provider=True)


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    svc = ls.service
    uri = params.text_document.uri
    st = svc.documents.get(uri)
    doc = svc.text_document(uri)
    if st is None or doc is None or st.kind is not Kind.PYTHON or not svc.caps.code_action_literals:
        return None
    svc.ensure_current(st)
    settings = svc.settings_for(uri)
    only = params.context.only
    fresh = [d for d in params.context.diagnostics
             if not (isinstance(d.data, dict) and d.data.get("version") not in (None, doc.version))]
    out = actions.quick_fixes(uri, doc.version, fresh, st.diagnostics, settings, svc.caps, only)
    fix_all = actions.fix_all_action(uri, doc.version, st.diagnostics, settings, svc.caps, only)
    if fix_all is not None:
        out.append(fix_all)
    return out or None
