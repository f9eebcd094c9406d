"""`notebookDocument/didChange`: cells added, removed, moved or edited (pygls has applied the change to its
copy); every cell's findings may change, so the whole notebook is analysed again, by the settings' `run`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp import notebooks
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.NOTEBOOK_DOCUMENT_DID_CHANGE


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    nb = ls.workspace.get_notebook_document(notebook_uri=uri)
    if nb is None:
        ls.log_warning(f"notebookDocument/didChange for a notebook that is not open: {uri}")
        return
    notebooks.clear(ls, notebooks.sync(ls.service, nb))
    settings = ls.service.settings_for(uri)
    if settings.run == "onType" or (params.change.cells is not None and params.change.cells.structure is not None):
        notebooks.schedule(ls, uri, settings.debounce_ms)
