"""`notebookDocument/didSave`: analyse the notebook (what `run: onSave` waits for)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp import notebooks
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.NOTEBOOK_DOCUMENT_DID_SAVE


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
    notebooks.schedule(ls, params.notebook_document.uri, 0)
