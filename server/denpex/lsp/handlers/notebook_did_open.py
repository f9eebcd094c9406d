"""`notebookDocument/didOpen`: track the notebook's code cells and analyse them at once (pygls has put the
notebook and its cells' text in its workspace before this runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp import notebooks
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.NOTEBOOK_DOCUMENT_DID_OPEN


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
    nb = ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
    if nb is None:
        return
    notebooks.sync(ls.service, nb)
    notebooks.schedule(ls, nb.uri, 0)
