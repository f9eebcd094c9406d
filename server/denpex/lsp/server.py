"""The Denpex language server: one handler per LSP method, each thin.

Handlers fetch the document and its settings, call the pure layers (analysis, diagnostics,
hovers, actions, logs) and convert. Every handler is guarded: a fault is logged through
`window/logMessage` (never `window/showMessage`) and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
import traceback
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.workspace import TextDocument

from denpex import __version__
from denpex.logs.render import render_markdown
from denpex.lsp import actions, hovers, logs
from denpex.lsp.analysis import Analyzer
from denpex.lsp.capabilities import ClientCaps
from denpex.lsp.diagnostics import for_client, to_diagnostic
from denpex.lsp.documents import (
    DocState,
    DocumentStore,
    Kind,
    contains,
    from_lsp_position,
    kind_of,
    path_of,
)
from denpex.lsp.paths import PathIndex
from denpex.lsp.settings import SettingsStore, unwrap_editor_settings
from denpex.rulebook import Rule, RuleBook, load_rulebook
from denpex.source.model import SourceFinding, TextEdit

T = TypeVar("T")

# test hook: rule ids whose findings fail to convert (proves one bad rule loses only its findings)
_FAULT_RULES = frozenset(filter(None, os.environ.get("DENPEX_LSP_FAULT_RULES", "").split(",")))


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
                self._server.analyzer.edit_file(path, edits)
        except Exception:
            self._server.log_exception(f"{uri}: could not apply a change; the document may be out of sync")
            return
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None


class DenpexLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("denpex", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=DenpexProtocol)
        self.caps = ClientCaps()
        self.settings = SettingsStore()
        self.documents = DocumentStore()
        self.paths = PathIndex()
        self.analyzer = Analyzer(self.log_warning)
        self.generation = 0  # bumped on every settings change
        self.traceback_diags: dict[str, list[types.Diagnostic]] = {}
        self.traceback_generation = 0
        self._book: RuleBook | None = None
        self._book_failed = False
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

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log faults instead of popping `window/showMessage` (pygls' default)."""
        self.log(f"internal error ({getattr(source, '__name__', source)}): {error!r}", types.MessageType.Error)

    def drain_setting_errors(self) -> None:
        for err in self.settings.errors:
            self.log_warning(err)
        self.settings.errors.clear()

    # rule book ---------------------------------------------------------------------------------

    @property
    def book(self) -> RuleBook | None:
        if self._book is None and not self._book_failed:
            try:
                self._book = load_rulebook()
            except Exception:
                self._book_failed = True
                self.log_exception("rule book failed to load; explanations unavailable")
        return self._book

    def rule(self, rule_id: str) -> Rule | None:
        book = self.book
        return book.get(rule_id) if book is not None and rule_id else None

    # documents ---------------------------------------------------------------------------------

    def text_document(self, uri: str) -> TextDocument | None:
        """The open document, never a file read from disk for an unknown URI."""
        doc: TextDocument | None = self.workspace.text_documents.get(uri)
        return doc

    def analyse(self, st: DocState) -> None:
        """Bring `st` up to date with its document (synchronously)."""
        doc = self.text_document(st.uri)
        if doc is None:
            return
        path = path_of(st.uri)
        settings = self.settings.for_path(path)
        self.drain_setting_errors()
        lines = doc.lines
        codec = doc.position_codec
        if st.kind is Kind.PYTHON:
            findings: list[SourceFinding] = []
            if len(doc.source) > settings.max_file_bytes:
                self.log_warning(f"{st.uri}: larger than maxFileBytes ({settings.max_file_bytes}); not analysed")
            else:
                try:
                    findings = self.analyzer.analyse(doc.source, path or st.uri, settings)
                except Exception:
                    self.log_exception(f"source analysis failed for {st.uri}")
            diags: list[types.Diagnostic] = []
            for f in findings:
                try:
                    if f.rule in _FAULT_RULES:
                        raise RuntimeError(f"injected fault in rule {f.rule}")
                    d = to_diagnostic(f, lines=lines, codec=codec, caps=self.caps, settings=settings,
                                      book=self.book, version=doc.version)
                except Exception:
                    self.log_exception(f"rule {f.rule}: finding dropped")
                    continue
                if d is not None:
                    diags.append(d)
            st.findings, st.diagnostics = findings, diags
        elif st.kind is Kind.LOG:
            st.diagnostics = []
            if settings.log_documents and len(doc.source) <= max(settings.max_file_bytes, 64 << 20):
                try:
                    dj = logs.diagnose(doc.source, self.book).to_json()
                    mapped = logs.map_frames(dj, self.paths, self.open_paths())
                    st.log_diagnosis = dj
                    st.diagnostics = logs.log_document_diagnostics(
                        dj, lines, codec, self.caps, settings, self.book, mapped)
                except Exception:
                    self.log_exception(f"log diagnosis failed for {st.uri}")
        st.analysed_version = doc.version
        st.settings_generation = self.generation

    def current(self, st: DocState) -> bool:
        doc = self.text_document(st.uri)
        return doc is not None and st.analysed_version == doc.version and st.settings_generation == self.generation

    def open_paths(self) -> list[str]:
        return [p for p in (path_of(u) for u in self.documents.docs) if p]

    def publish(self, uri: str) -> None:
        """Push this URI's diagnostics (analysis + traceback layer) to the client."""
        st = self.documents.get(uri)
        doc = self.text_document(uri)
        own = st.diagnostics if st is not None else []
        diags = for_client([*own, *self.traceback_diags.get(uri, [])], self.caps)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diags, version=doc.version if (doc is not None and st is not None) else None))

    def refresh(self, uri: str) -> None:
        st = self.documents.get(uri)
        if st is None:
            return
        self.analyse(st)
        if not self.caps.pull_diagnostics:
            self.publish(uri)

    def schedule(self, st: DocState, delay_ms: int) -> None:
        if self.caps.pull_diagnostics:
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
        for st in list(self.documents.docs.values()):
            self.schedule(st, 0)
        if self.caps.pull_diagnostics and self.caps.diagnostic_refresh:
            self.spawn(self._refresh_pull())

    async def populate_index(self) -> None:
        """Index the folders' Python files in the background, then re-run open documents."""
        try:
            await asyncio.sleep(0.05)  # let the first diagnostics out first
            files = self.analyzer.workspace_files(skip=self.open_paths())
            for i, path in enumerate(files):
                if path not in self.open_paths():
                    self.analyzer.index_file(path)
                if i % 16 == 15:
                    await asyncio.sleep(0)
            self.log(f"indexed {len(files)} workspace files", types.MessageType.Log)
            for st in list(self.documents.docs.values()):
                if st.kind is Kind.PYTHON:
                    self.schedule(st, 0)
        except asyncio.CancelledError:
            raise
        except Exception:
            self.log_exception("workspace indexing failed")

    def spawn(self, coro: Any) -> None:
        fut: asyncio.Future[None] = asyncio.ensure_future(coro)
        self._background.add(fut)
        fut.add_done_callback(self._background.discard)

    async def _refresh_pull(self) -> None:
        try:
            await self.workspace_diagnostic_refresh_async(None)
        except Exception as exc:
            self.log(f"workspace/diagnostic/refresh failed: {exc!r}", types.MessageType.Log)

    def set_folders(self, folders: list[str]) -> None:
        self.settings.set_folders(folders)
        self.paths.set_folders(folders)
        self.analyzer.set_folders(folders)

    async def fetch_configuration(self) -> None:
        """Per-folder editor settings through `workspace/configuration` (when declared)."""
        if not self.caps.workspace_configuration:
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
            self.settings.set_global({**self.settings.global_values, **result[0]})
        for folder, values in zip(folders, result[1:], strict=False):
            p = path_of(folder.uri)
            if p is not None and isinstance(values, dict):
                self.settings.set_folder(p, values)


# --- guards ------------------------------------------------------------------------------------

def guarded(default: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Catch, log through window/logMessage, and answer `default`."""

    def deco(fn: Callable[..., T]) -> Callable[..., T]:
        if asyncio.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def awrapper(ls: DenpexLanguageServer, *args: Any) -> Any:
                try:
                    return await fn(ls, *args)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    ls.log_exception(f"{fn.__name__} failed")
                    return default
            return awrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(ls: DenpexLanguageServer, *args: Any) -> Any:
            try:
                return fn(ls, *args)
            except Exception:
                ls.log_exception(f"{fn.__name__} failed")
                return default
        return wrapper

    return deco


# --- lifecycle ---------------------------------------------------------------------------------

@guarded(None)
def initialize(ls: DenpexLanguageServer, params: types.InitializeParams) -> None:
    ls.caps = ClientCaps.resolve(params.capabilities)
    glob, per_folder = unwrap_editor_settings(params.initialization_options)
    ls.settings.set_global(glob)
    folders = [p for p in (path_of(f.uri) for f in params.workspace_folders or []) if p]
    if not folders and params.root_uri:
        root = path_of(params.root_uri)
        folders = [root] if root else []
    ls.set_folders(folders)
    for uri, values in per_folder.items():
        p = path_of(uri) if "://" in uri else uri
        if p is not None:
            ls.settings.set_folder(p, values)
    if ls.caps.pull_diagnostics:
        ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
            identifier="denpex", inter_file_dependencies=True, workspace_diagnostics=False,
        ))(pull_diagnostics)


@guarded(None)
async def initialized(ls: DenpexLanguageServer, params: types.InitializedParams) -> None:
    await ls.fetch_configuration()
    ls.drain_setting_errors()
    ls.spawn(ls.populate_index())
    ls.log(
        f"denpex {__version__} on Python {sys.version.split()[0]} ({sys.executable}); "
        f"source analyser: {'denpex.source' if ls.analyzer.real else 'built-in stand-in'}; "
        f"diagnostics: {'pull' if ls.caps.pull_diagnostics else 'push'}; "
        f"folders: {ls.settings.folders or '-'}"
    )
    if ls.caps.watched_files_dynamic:
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                types.Registration(
                    id="denpex-watch",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                        types.FileSystemWatcher(glob_pattern="**/*.py"),
                        types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                    ]),
                )
            ]))
        except Exception as exc:
            ls.log(f"file watching not registered: {exc!r}", types.MessageType.Log)


@guarded(None)
def shutdown(ls: DenpexLanguageServer, params: None) -> None:
    for st in ls.documents.docs.values():
        if st.pending is not None:
            st.pending.cancel()


# --- text document synchronisation -------------------------------------------------------------

@guarded(None)
def did_open(ls: DenpexLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    td = params.text_document
    st = ls.documents.open(td.uri, kind_of(td.uri, td.language_id), td.version)
    if st.kind is not Kind.OTHER:
        ls.schedule(st, 0)


@guarded(None)
def did_change(ls: DenpexLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    uri, version = params.text_document.uri, params.text_document.version
    st = ls.documents.get(uri)
    if st is None:
        ls.log_warning(f"didChange for a document that is not open: {uri}")
        return
    if st.version is not None and version is not None and version <= st.version:
        ls.log_warning(f"{uri}: out-of-order change (version {version} after {st.version})")
    st.version = version
    if uri in ls.traceback_diags:  # lines may have moved: the traceback layer is stale
        del ls.traceback_diags[uri]
    settings = ls.settings.for_path(path_of(uri))
    if st.kind is Kind.PYTHON and settings.run == "onType":
        ls.schedule(st, settings.debounce_ms)
    elif st.kind is Kind.LOG:
        ls.schedule(st, max(settings.debounce_ms, 100))


@guarded(None)
def did_save(ls: DenpexLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = path_of(uri)
    if path is not None and Path(path).name == "pyproject.toml":
        folder = ls.settings.folder_of(path)
        if folder is not None:
            ls.settings.reload_project(folder)
            ls.generation += 1
            ls.reanalyse_all()
        return
    st = ls.documents.get(uri)
    if st is not None and st.kind is not Kind.OTHER:
        ls.schedule(st, 0)


@guarded(None)
def did_close(ls: DenpexLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    st = ls.documents.close(uri)
    if st is None:
        return
    if not ls.caps.pull_diagnostics:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=for_client(ls.traceback_diags.get(uri, []), ls.caps)))
    path = path_of(uri)
    if path is not None and st.kind is Kind.PYTHON:
        try:
            ls.analyzer.update_file(path, Path(path).read_text(encoding="utf-8"))
        except OSError:
            ls.analyzer.update_file(path, None)


# --- workspace ---------------------------------------------------------------------------------

@guarded(None)
async def did_change_configuration(ls: DenpexLanguageServer, params: types.DidChangeConfigurationParams) -> None:
    glob, per_folder = unwrap_editor_settings(params.settings)
    if glob or per_folder:
        ls.settings.set_global(glob)
        for uri, values in per_folder.items():
            p = path_of(uri) if "://" in uri else uri
            if p is not None:
                ls.settings.set_folder(p, values)
    else:
        await ls.fetch_configuration()
    ls.generation += 1
    ls.settings.for_path(None)
    ls.drain_setting_errors()
    ls.reanalyse_all()


@guarded(None)
def did_change_watched_files(ls: DenpexLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
    settings_changed = False
    for change in params.changes:
        path = path_of(change.uri)
        if path is None:
            continue
        if Path(path).name == "pyproject.toml":
            folder = ls.settings.folder_of(path)
            if folder is not None:
                ls.settings.reload_project(folder)
                settings_changed = True
            continue
        if change.type != types.FileChangeType.Changed:
            ls.paths.invalidate()
        if change.uri in ls.documents.docs:
            continue  # the open buffer is the truth
        if change.type == types.FileChangeType.Deleted:
            ls.analyzer.update_file(path, None)
        else:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                ls.analyzer.update_file(path, Path(path).read_text(encoding="utf-8"))
    if settings_changed:
        ls.generation += 1
        ls.drain_setting_errors()
    # callees in other files may have changed: re-run open Python documents
    for st in ls.documents.docs.values():
        if st.kind is Kind.PYTHON:
            ls.schedule(st, 0)


@guarded(None)
def did_change_workspace_folders(ls: DenpexLanguageServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    current = set(ls.settings.folders)
    for f in params.event.removed:
        p = path_of(f.uri)
        current.discard(p or "")
    for f in params.event.added:
        p = path_of(f.uri)
        if p:
            current.add(p)
    ls.set_folders(sorted(current))
    ls.spawn(ls.populate_index())
    ls.generation += 1
    ls.reanalyse_all()


# --- diagnostics (pull) ------------------------------------------------------------------------

@guarded(types.RelatedFullDocumentDiagnosticReport(items=[]))
def pull_diagnostics(
    ls: DenpexLanguageServer, params: types.DocumentDiagnosticParams
) -> types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport:
    uri = params.text_document.uri
    st = ls.documents.get(uri)
    doc = ls.text_document(uri)
    tb = ls.traceback_diags.get(uri, [])
    if st is None or doc is None:
        return types.RelatedFullDocumentDiagnosticReport(items=for_client(tb, ls.caps))
    if not ls.current(st):
        ls.analyse(st)
    result_id = f"{doc.version}:{ls.generation}:{ls.traceback_generation}"
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(
        items=for_client([*st.diagnostics, *tb], ls.caps), result_id=result_id)


# --- hover -------------------------------------------------------------------------------------

@guarded(None)
def hover(ls: DenpexLanguageServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    st = ls.documents.get(uri)
    doc = ls.text_document(uri)
    if st is None or doc is None or st.kind is Kind.OTHER:
        return None
    lines = doc.lines
    at = from_lsp_position(lines, doc.position_codec, params.position)
    if at is None:
        return None
    if not ls.current(st):
        ls.analyse(st)
    line, col = at
    sections: list[str] = []
    rng: types.Range | None = None
    seen: set[str] = set()
    for d in [*st.diagnostics, *ls.traceback_diags.get(uri, [])]:
        if not contains(d.range, params.position):
            continue
        data = d.data if isinstance(d.data, dict) else {}
        rule_id = str(data.get("rule", ""))
        key = f"{rule_id}:{data.get('role', '')}"
        if key in seen:
            continue
        seen.add(key)
        rng = rng or d.range
        if data.get("role") == "verdict" and st.log_diagnosis is not None:
            sections.append(_verdict_markdown(ls, st))
            continue
        rule = ls.rule(rule_id)
        sections.append(hovers.rule_markdown(rule, d.message) if rule is not None
                        else hovers.fallback_markdown(str(d.code), rule_id, d.message))
    if st.kind is Kind.PYTHON:
        text_line = lines[line] if line < len(lines) else ""
        for rid in hovers.suppression_ids_at(text_line, col):
            rule = ls.rule(rid)
            if rule is not None and rule.id not in seen:
                seen.add(rule.id)
                sections.append(hovers.rule_markdown(rule))
        for region in ls.analyzer.regions(doc.source, path_of(uri) or uri, st.findings, line):
            if region.start_col <= col <= region.end_col:
                rules = {r: x for r in {f.rule for f in region.findings} if (x := ls.rule(r)) is not None}
                sections.append(hovers.region_markdown(region, rules))
    if not sections:
        return None
    value = hovers.join_sections(sections)
    if ls.caps.hover_markdown:
        contents = types.MarkupContent(kind=types.MarkupKind.Markdown, value=value)
    else:
        contents = types.MarkupContent(kind=types.MarkupKind.PlainText, value=hovers.to_plaintext(value))
    return types.Hover(contents=contents, range=rng)


def _verdict_markdown(ls: DenpexLanguageServer, st: DocState) -> str:
    doc = ls.text_document(st.uri)
    if doc is None:
        return ""
    return render_markdown(logs.diagnose(doc.source, ls.book))


# --- code actions ------------------------------------------------------------------------------

@guarded(None)
def code_action(ls: DenpexLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    st = ls.documents.get(uri)
    doc = ls.text_document(uri)
    if st is None or doc is None or st.kind is not Kind.PYTHON or not ls.caps.code_action_literals:
        return None
    if not ls.current(st):
        ls.analyse(st)
    settings = ls.settings.for_path(path_of(uri))
    only = params.context.only
    fresh = [d for d in params.context.diagnostics
             if not (isinstance(d.data, dict) and d.data.get("version") not in (None, doc.version))]
    out = actions.quick_fixes(uri, doc.version, fresh, st.diagnostics, settings, ls.caps, only)
    fix_all = actions.fix_all_action(uri, doc.version, st.diagnostics, settings, ls.caps, only)
    if fix_all is not None:
        out.append(fix_all)
    return out or None


@guarded(None)
def code_action_resolve(ls: DenpexLanguageServer, action: types.CodeAction) -> types.CodeAction:
    data = action.data if isinstance(action.data, dict) else {}
    if data.get("action") != "fixAll" or action.edit is not None:
        return action
    uri = str(data.get("uri", ""))
    st = ls.documents.get(uri)
    doc = ls.text_document(uri)
    if st is None or doc is None:
        return action
    if not ls.current(st):
        ls.analyse(st)
    settings = ls.settings.for_path(path_of(uri))
    edits = actions.fix_all_edits(st.diagnostics, settings)
    action.edit = actions.workspace_edit(uri, doc.version, edits, ls.caps)
    return action


# --- commands ----------------------------------------------------------------------------------

def diagnose_command(ls: DenpexLanguageServer, *args: Any) -> dict[str, Any]:
    """`denpex.diagnose`: text -> diagnosis JSON + Markdown; frames become source diagnostics."""
    text, log_uri = logs.parse_arguments(args)
    try:
        diagnosis = logs.diagnose(text, ls.book)
        d = diagnosis.to_json()
        mapped = logs.map_frames(d, ls.paths, ls.open_paths())
        settings = ls.settings.for_path(mapped[0].path if mapped else None)

        def text_of(uri: str, path: str) -> list[str] | None:
            doc = ls.text_document(uri)
            return list(doc.lines) if doc is not None else logs.read_lines(path)

        codec = ls.workspace.position_codec
        per_uri = logs.frame_diagnostics(d, mapped, text_of, codec, ls.caps, settings, ls.book, log_uri)
    except Exception:
        ls.log_exception("denpex.diagnose failed")
        raise
    old = set(ls.traceback_diags)
    ls.traceback_diags = per_uri
    ls.traceback_generation += 1
    for uri in old | set(per_uri):
        if ls.caps.pull_diagnostics and uri in ls.documents.docs and ls.caps.diagnostic_refresh:
            continue
        ls.publish(uri)
    if ls.caps.pull_diagnostics and ls.caps.diagnostic_refresh:
        ls.spawn(ls._refresh_pull())
    return logs.command_result(diagnosis, mapped)


# --- wiring ------------------------------------------------------------------------------------

def create_server() -> DenpexLanguageServer:
    ls = DenpexLanguageServer()
    ls.feature(types.INITIALIZE)(initialize)
    ls.feature(types.INITIALIZED)(initialized)
    ls.feature(types.SHUTDOWN)(shutdown)
    ls.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(did_save)
    ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_workspace_folders)
    ls.feature(types.TEXT_DOCUMENT_HOVER)(hover)
    ls.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL_KIND],
        resolve_provider=True,
    ))(code_action)
    ls.feature(types.CODE_ACTION_RESOLVE)(code_action_resolve)
    ls.command(logs.COMMAND)(diagnose_command)
    return ls


# An LSP message larger than this is refused (log documents are analysed up to 64 MiB).
MAX_MESSAGE_BYTES = 256 << 20
MAX_HEADER_LINE = 64 << 10


class BoundedStdin:
    """stdin as pygls' stdio loop reads it, with bounds on what a client can make it allocate.

    pygls reads a body with `stdin.read(Content-Length)`, which allocates the whole claimed length up
    front: `Content-Length: 1000000000000` killed the server with MemoryError. A claim over
    MAX_MESSAGE_BYTES is answered with one byte that is not JSON, so pygls logs "Unable to handle message" and goes back to reading headers; the refused
    body's bytes are then skipped as garbage header lines. Header lines are read at most
    MAX_HEADER_LINE bytes at a time, so a newline-free stream of garbage cannot grow one line forever.
    """

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def readline(self) -> bytes:
        line: bytes = self.raw.readline(MAX_HEADER_LINE)
        return line

    def read(self, n: int) -> bytes:
        if n > MAX_MESSAGE_BYTES:
            print(f"denpex: refused an LSP message of {n} bytes (over {MAX_MESSAGE_BYTES})", file=sys.stderr)
            return b"\x00"
        data: bytes = self.raw.read(n)
        return data


def serve(tcp_port: int | None = None, host: str = "127.0.0.1") -> int:
    ls = create_server()
    if tcp_port is not None:
        ls.start_tcp(host, tcp_port)
    else:
        ls.start_io(stdin=BoundedStdin(sys.stdin.buffer))  # type: ignore[arg-type]
    return 0

