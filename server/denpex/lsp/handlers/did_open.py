"""`textDocument/didOpen`: track the document and analyse it at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.documents import Kind, kind_of
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.TEXT_DOCUMENT_DID_OPEN


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    td = params.text_document
    st = ls.service.documents.open(td.uri, kind_of(td.uri, td.language_id), td.version)
    if st.kind is not Kind.OTHER:
        ls.schedule(st, 0)
