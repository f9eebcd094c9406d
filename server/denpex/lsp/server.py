"""The Denpex language server: pygls' server with the service attached, and what handlers need of
the wire (logging, publishing, scheduling analyses, requests to the client).

One handler module per LSP method lives in `denpex.lsp.handlers`; the byte stream (stdio, TCP) is
in `denpex.lsp.transport`; the documents and the analysers are in `denpex.lsp.service`; `denpex.lsp.app`
puts them together.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import time
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

INDEX_SLICE_S = 0.02  # the background index yields to the event loop this often
PROGRESS_EVERY_S = 0.25  # and reports progress at most this often
FIRST_OPEN_GRACE_S = 0.05  # a client opens its first document right after `initialized`
FIRST_DIAGNOSTICS_WAIT_S = 30.0  # the index starts anyway after this
PROGRESS_CREATE_WAIT_S = 5.0  # a client that never answers window/workDoneProgress/create gets no progress


class DenpexLanguageServer(LanguageServer):
    def __init__(self, protocol_cls: type[LanguageServerProtocol]) -> None:
        super().__init__("denpex", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=notebooks.SYNC_OPTIONS, protocol_cls=protocol_cls)
        self.service = DocumentService(self, self.text_document)
        self._background: set[asyncio.Future[None]] = set()
        self._index_run = 0  # bumped by each populate_index: an older run stops

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
        """Index the folders' Python files in the background once the open documents have their first
        diagnostics (from the open file and what the index already knows), with `$/progress` when the client
        shows it; then re-run the open documents once, as the index may reach them from other files now."""
        svc = self.service
        self._index_run += 1
        run = self._index_run
        progress: str | None = None
        try:
            await self._first_diagnostics_out()
            if run != self._index_run:
                return  # the folders changed meanwhile: the newer run indexes them
            gc.unfreeze()  # a new index replaces the old: what the last run froze may be garbage now
            files = svc.analyzer.workspace_files(skip=svc.open_paths())
            progress = await self._progress_begin(f"Denpex: indexing {len(files):,} files", len(files))
            shown = slice_start = time.perf_counter()
            for i, path in enumerate(files):
                if path not in svc.open_paths():
                    svc.analyzer.index_file(path)
                now = time.perf_counter()
                if now - slice_start >= INDEX_SLICE_S:  # let a keystroke's analysis in between
                    if progress is not None and now - shown >= PROGRESS_EVERY_S:
                        self._progress_report(progress, i + 1, len(files))
                        shown = now
                    await asyncio.sleep(0)
                    if run != self._index_run:
                        return
                    slice_start = time.perf_counter()
            self.log(f"indexed {len(files)} workspace files", types.MessageType.Log)
            # the index (millions of objects, Megatron-LM's 1,344 files) lives as long as the server: kept out of
            # the cycle collector's passes, which walked all of it in the middle of keystrokes (max 257 ms
            # against p50 57 ms in one series of 40 on transformer_layer.py)
            gc.collect()
            gc.freeze()
            self.reanalyse_python()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.log_exception("workspace indexing failed")
        finally:
            if progress is not None:
                self._progress_end(progress)

    async def _first_diagnostics_out(self) -> None:
        """Wait until every open document has been analysed once (a first start loads the rule book and the
        analyser then), or briefly for a document to open; the index must not delay the first diagnostics."""
        t0 = time.perf_counter()
        await asyncio.sleep(FIRST_OPEN_GRACE_S)
        while time.perf_counter() - t0 < FIRST_DIAGNOSTICS_WAIT_S:
            docs = [st for st in self.service.documents.docs.values() if st.kind is Kind.PYTHON and st.notebook is None]
            if all(st.analysed_version is not None for st in docs):
                return
            await asyncio.sleep(0.01)

    async def _progress_begin(self, title: str, total: int) -> str | None:
        """A server-initiated progress token (None when the client shows no progress or does not answer)."""
        if not self.service.caps.work_done_progress or total == 0:
            return None
        token = f"denpex-index-{self._index_run}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), PROGRESS_CREATE_WAIT_S)
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title=title, cancellable=False, percentage=0, message=f"0/{total:,}"))
        except Exception as exc:
            self.log(f"progress not shown: {exc!r}", types.MessageType.Log)
            return None
        return token

    def _progress_report(self, token: str, done: int, total: int) -> None:
        with contextlib.suppress(Exception):  # the transport is gone
            self.work_done_progress.report(token, types.WorkDoneProgressReport(
                percentage=done * 100 // total, message=f"{done:,}/{total:,}"))

    def _progress_end(self, token: str) -> None:
        with contextlib.suppress(Exception):
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="indexed"))

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
