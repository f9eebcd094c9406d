"""`textDocument/didSave`: a saved pyproject.toml reloads its folder's `[tool.denpex]`; a saved
document is analysed (the `run: onSave` mode)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.documents import Kind, path_of
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.TEXT_DOCUMENT_DID_SAVE
OPTIONS = types.SaveOptions(include_text=False)


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    svc = ls.service
    uri = params.text_document.uri
    path = path_of(uri)
    if path is not None and Path(path).name == "pyproject.toml":
        folder = svc.settings.folder_of(path)
        if folder is not None:
            svc.settings.reload_project(folder)
            svc.settings_changed()
            ls.reanalyse_all()
        return
    st = svc.documents.get(uri)
    if st is not None and st.kind is not Kind.OTHER:
        ls.schedule(st, 0)
