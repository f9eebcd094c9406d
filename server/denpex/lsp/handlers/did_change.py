"""`textDocument/didChange`: the text is already applied (transport.DenpexProtocol); schedule the
analysis by the document's settings (`run`, `debounceMs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.documents import Kind
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.TEXT_DOCUMENT_DID_CHANGE


@guarded(None)
def handle(ls: DenpexLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    svc = ls.service
    uri, version = params.text_document.uri, params.text_document.version
    st = svc.documents.get(uri)
    if st is None:
        ls.log_warning(f"didChange for a document that is not open: {uri}")
        return
    if st.version is not None and version is not None and version <= st.version:
        ls.log_warning(f"{uri}: out-of-order change (version {version} after {st.version})")
    st.version = version
    if uri in svc.traceback_diags:  # lines may have moved: the traceback layer is stale
        del svc.traceback_diags[uri]
    settings = svc.settings_for(uri)
    if st.kind is Kind.PYTHON and settings.run == "onType":
        ls.schedule(st, settings.debounce_ms)
    elif st.kind is Kind.LOG:
        ls.schedule(st, max(settings.debounce_ms, 100))
