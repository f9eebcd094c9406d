"""`textDocument/didClose`: forget the document, clear its diagnostics (the traceback layer stays),
and give the index the file as it is on disk again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.diagnostics import for_client
from denpex.lsp.documents import Kind, path_of
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.TEXT_DOCUMENT_DID_CLOSE


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    svc = ls.service
    uri = params.text_document.uri
    st = svc.documents.close(uri)
    if st is None:
        return
    if not svc.caps.pull_diagnostics:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=for_client(svc.traceback_diags.get(uri, []), svc.caps)))
    path = path_of(uri)
    if path is not None and st.kind is Kind.PYTHON:
        try:
            svc.analyzer.update_file(path, Path(path).read_text(encoding="utf-8"))
        except OSError:
            svc.analyzer.update_file(path, None)
