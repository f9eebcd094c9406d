"""The Denpex language server: pygls' server with the service attached, and what handlers need of
the wire (logging, publishing, scheduling analyses, requests to the client).

One handler module per LSP method lives in `denpex.lsp.handlers`; the byte stream (stdio, TCP) is
in `denpex.lsp.transport`; the documents and the analysers are in `denpex.lsp.service`; `denpex.lsp.app`
puts them together.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
from collections.abc import Coroutine
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument

from denpex import __version__
from denpex.lsp import notebooks
from denpex.lsp.diagnostics import for_client
from denpex.lsp.documents import DocState, Kind, path_of
from denpex.lsp.service import DocumentService


class DenpexLanguageServer(LanguageServer):
    def __init__(self, protocol_cls: type[LanguageServerProtocol]) -> None:
        super().__init__("denpex", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=notebooks.SYNC_OPTIONS, protocol_cls=protocol_cls)
        self.service = DocumentService(self, self.text_document)
        self._background: set[asyncio.Future[None]] = set()

    # logging -----------------------------------------------------------------------------------

    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # the transport is gone; stderr is all that is left
            print(f"denpex: {message}", file=sys.stderr)

    def log_warning(self, message: str) -> None:
        self.log(message, types.MessageType.Warning)

    def log_exception(self, context: str) -> None:
        self.log(f"{context}\n{traceback.format_exc()}", types.MessageType.Error)

    def config_error(self, message: str) -> None:
        """A configuration problem is the user's to fix: logged as an error (window/logMessage, which
        the editor's log and VS Code's output channel show; never window/showMessage, which pops up on
        every settings change), with the text `denpex scan` prints for it."""
        self.log(f"denpex: {message}", types.MessageType.Error)

    def report_server_error(self, error: Exception, source: object) -> None:
        """Log faults instead of popping `window/showMessage` (pygls' default)."""
        self.log(f"internal error ({getattr(source, '__name__', source)}): {error!r}", types.MessageType.Error)

    # documents ---------------------------------------------------------------------------------

    def text_document(self, uri: str) -> TextDocument | None:
        """The open document, never a file read from disk for an unknown URI. pygls files documents under the
        percent-decoded URI (a notebook cell's `...ipynb#W1sZmlsZQ%3D%3D`, a path with `%20`)."""
        docs = self.workspace.text_documents
        doc: TextDocument | None = docs.get(uri)
        return doc if doc is not None else docs.get(unquote(uri))

    def publish(self, uri: str) -> None:
        """Push this URI's diagnostics (analysis + traceback layer) to the client."""
        svc = self.service
        st = svc.documents.get(uri)
        doc = self.text_document(uri)
        own = st.diagnostics if st is not None else []
        diags = for_client([*own, *svc.traceback_diags.get(uri, [])], svc.caps)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diags, version=doc.version if (doc is not None and st is not None) else None))

    def refresh(self, uri: str) -> None:
        st = self.service.documents.get(uri)
        if st is None:
            return
        self.service.analyse(st)
        if not self.service.caps.pull_diagnostics:
            self.publish(uri)

    def schedule(self, st: DocState, delay_ms: int) -> None:
        if self.service.caps.pull_diagnostics:
            return  # the client pulls; analysis happens on demand
        if st.pending is not None and not st.pending.done():
            st.pending.cancel()
        st.pending = asyncio.ensure_future(self._later(st.uri, delay_ms))

    async def _later(self, uri: str, delay_ms: int) -> None:
        try:
            await asyncio.sleep(delay_ms / 1000 if delay_ms else 0)
            self.refresh(uri)
        except asyncio.CancelledError:
            pass
        except Exception:
            self.log_exception(f"diagnostics failed for {uri}")

    def reanalyse_all(self) -> None:
        for st in list(self.service.documents.docs.values()):
            if st.notebook is None:  # a notebook's cells are analysed together (and pushed), below
                self.schedule(st, 0)
        for nb_uri in list(self.service.notebooks.notebooks):
            notebooks.schedule(self, nb_uri, 0)
        if self.service.caps.pull_diagnostics and self.service.caps.diagnostic_refresh:
            self.spawn(self.refresh_pull())

    def reanalyse_python(self) -> None:
        for st in list(self.service.documents.docs.values()):
            if st.kind is Kind.PYTHON and st.notebook is None:
                self.schedule(st, 0)
        for nb_uri in list(self.service.notebooks.notebooks):
            notebooks.schedule(self, nb_uri, 0)

    def spawn(self, coro: Coroutine[object, object, None]) -> None:
        fut: asyncio.Future[None] = asyncio.ensure_future(coro)
        self._background.add(fut)
        fut.add_done_callback(self._background.discard)

    # background work and requests to the client -----------------------------------------------

    async def populate_index(self) -> None:
        """Index the folders' Python files in the background, then re-run open documents."""
        svc = self.service
        try:
            await asyncio.sleep(0.05)  # let the first diagnostics out first
            files = svc.analyzer.workspace_files(skip=svc.open_paths())
            for i, path in enumerate(files):
                if path not in svc.open_paths():
                    svc.analyzer.index_file(path)
                if i % 16 == 15:
                    await asyncio.sleep(0)
            self.log(f"indexed {len(files)} workspace files", types.MessageType.Log)
            self.reanalyse_python()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.log_exception("workspace indexing failed")

    async def refresh_pull(self) -> None:
        try:
            await self.workspace_diagnostic_refresh_async(None)
        except Exception as exc:
            self.log(f"workspace/diagnostic/refresh failed: {exc!r}", types.MessageType.Log)

    async def fetch_configuration(self) -> None:
        """Per-folder editor settings through `workspace/configuration` (when declared)."""
        svc = self.service
        if not svc.caps.workspace_configuration:
            return
        folders = list(self.workspace.folders.values())
        items = [types.ConfigurationItem(section="denpex")]
        items += [types.ConfigurationItem(scope_uri=f.uri, section="denpex") for f in folders]
        try:
            result = await self.workspace_configuration_async(types.ConfigurationParams(items=items))
        except Exception as exc:
            self.log(f"workspace/configuration failed: {exc!r}", types.MessageType.Log)
            return
        if not result:
            return
        if isinstance(result[0], dict):
            svc.settings.set_global({**svc.settings.global_values, **result[0]})
        for folder, values in zip(folders, result[1:], strict=False):
            p = path_of(folder.uri)
            if p is not None and isinstance(values, dict):
                svc.settings.set_folder(p, values)
