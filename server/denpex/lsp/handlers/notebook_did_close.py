"""`notebookDocument/didClose`: forget the notebook and its cells, and clear the cells' diagnostics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp import notebooks
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.NOTEBOOK_DOCUMENT_DID_CLOSE


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidCloseNotebookDocumentParams) -> None:
    cells = notebooks.forget(ls.service, params.notebook_document.uri)
    notebooks.clear(ls, cells + [c.uri for c in params.cell_text_documents if c.uri not in cells])
