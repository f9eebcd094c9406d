"""`codeAction/resolve`: the edits of `source.fixAll.denpex`, computed against the current findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp import actions
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.CODE_ACTION_RESOLVE


@guarded(None)
def handle(ls: DenpexLanguageServer, action: types.CodeAction) -> types.CodeAction | None:
    svc = ls.service
    data = action.data if isinstance(action.data, dict) else {}
    if data.get("action") != "fixAll" or action.edit is not None:
        return action
    uri = str(data.get("uri", ""))
    st = svc.documents.get(uri)
    doc = svc.text_document(uri)
    if st is None or doc is None:
        return action
    svc.ensure_current(st)
    edits = actions.fix_all_edits(st.diagnostics, svc.settings_for(uri))
    action.edit = actions.workspace_edit(uri, doc.version, edits, svc.caps)
    return action
