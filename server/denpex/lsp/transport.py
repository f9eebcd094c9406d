"""The wire: pygls' protocol, hardened, and the byte streams it runs over (stdio, TCP).

Nothing here knows what a diagnostic is; handlers and the service do.
"""

from __future__ import annotations

import functools
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from denpex.lsp.documents import path_of
from denpex.lsp.stdio import MAX_HEADER_LINE, MAX_MESSAGE_BYTES, BoundedStdin
from denpex.source.model import TextEdit

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

class DenpexProtocol(LanguageServerProtocol):
    """pygls' protocol, hardened: a change to an unknown or out-of-sync document is logged, not raised."""

    _server: DenpexLanguageServer
    _initialize_seen = False

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: Any = None,
                         kwargs: Any = None) -> None:
        """pygls 2.1.1 files the future of every generator or coroutine handler under `msg_id` in
        `_request_futures`, but only a request's callback removes it again. A notification's entry (a
        made-up uuid no client can cancel) stayed forever: each didChange leaked ~1.5 KB (about 15 MB per
        10,000 edits). Do not file them at all: only a client's request can be cancelled by id. (Not a
        done-callback: `shutdown` cancels filed futures while iterating over the dict.)"""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        if not (isinstance(callback, functools.partial) and callback.func == self._send_handler_result):
            self._request_futures.pop(msg_id, None)  # a notification or a generator's inner step

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        """A second `initialize` is refused: pygls would re-run it, replacing the workspace (open documents
        lost) and the client's capabilities (a stray `initialize` with `{}` turned code actions off)."""
        if self._initialize_seen:
            raise JsonRpcInvalidRequest("initialize may be sent only once")
        self._initialize_seen = True
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        return result

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Generator[Any, Any, None]:
        """Apply the change to pygls' copy and, edit by edit, to the analyser's index (incremental
        re-parse); then run the didChange handler."""
        uri = params.text_document.uri
        if uri not in self.workspace.text_documents:
            self._server.log_warning(f"didChange for a document that is not open: {uri}")
            return
        edits: list[TextEdit] | None = []
        try:
            for change in params.content_changes:
                if edits is not None and isinstance(change, types.TextDocumentContentChangePartial):
                    doc = self.workspace.get_text_document(uri)
                    r = doc.position_codec.range_from_client_units(doc.lines, change.range)
                    edits.append(TextEdit(r.start.line, r.start.character, r.end.line, r.end.character, change.text))
                else:
                    edits = None  # a full replacement: the index re-parses
                self.workspace.update_text_document(params.text_document, change)
            path = path_of(uri)
            if edits and path is not None:
                self._server.service.analyzer.edit_file(path, edits)
        except Exception:
            self._server.log_exception(f"{uri}: could not apply a change; the document may be out of sync")
            return
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None


__all__ = ["MAX_HEADER_LINE", "MAX_MESSAGE_BYTES", "BoundedStdin", "DenpexProtocol"]
