"""The document-analysis service: open documents, the workspace index, settings, the rule book, and
the runs of the analysers that turn a document into diagnostics.

It knows nothing of the wire: handlers call it, the server (server.py) publishes what it computed.
Document text lives in pygls' workspace (it applies incremental changes); the service reads it
through `get_text`, never from disk for an unknown URI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from lsprotocol import types
from pygls.workspace import TextDocument

from denpex.lsp import logs
from denpex.lsp.analysis import Analyzer
from denpex.lsp.capabilities import ClientCaps
from denpex.lsp.diagnostics import to_diagnostic
from denpex.lsp.documents import DocState, DocumentStore, Kind, path_of
from denpex.lsp.notebooks import NotebookStore
from denpex.lsp.notebooks import analyse as analyse_notebook
from denpex.lsp.paths import PathIndex
from denpex.lsp.settings import Settings, SettingsStore
from denpex.rulebook import Rule, RuleBook, load_rulebook
from denpex.source.model import SourceFinding


class Log(Protocol):
    """Where the service reports: `window/logMessage` in the server."""

    def log_warning(self, message: str) -> None: ...

    def log_exception(self, context: str) -> None: ...

    def config_error(self, message: str) -> None: ...


class DocumentService:
    def __init__(self, log: Log, get_text: Callable[[str], TextDocument | None]) -> None:
        self._log = log
        self._get_text = get_text
        self.caps = ClientCaps()
        self.settings = SettingsStore(self._book_or_builtin)
        self.documents = DocumentStore()
        self.notebooks = NotebookStore()
        self.paths = PathIndex()
        self.analyzer = Analyzer(log.log_warning)
        self.generation = 0  # bumped on every settings change
        self.traceback_diags: dict[str, list[types.Diagnostic]] = {}
        self.traceback_generation = 0
        self._book: RuleBook | None = None
        self._book_failed = False

    # rule book ---------------------------------------------------------------------------------

    @property
    def book(self) -> RuleBook | None:
        if self._book is None and not self._book_failed:
            try:
                self._book = load_rulebook()
            except Exception:
                self._book_failed = True
                self._log.log_exception("rule book failed to load; explanations unavailable")
        return self._book

    def _book_or_builtin(self) -> RuleBook:
        return self.book or load_rulebook()

    def rule(self, rule_id: str) -> Rule | None:
        book = self.book
        return book.get(rule_id) if book is not None and rule_id else None

    # settings ----------------------------------------------------------------------------------

    def settings_for(self, uri_or_path: str | None) -> Settings:
        path = path_of(uri_or_path) if uri_or_path is not None and "://" in uri_or_path else uri_or_path
        return self.settings.for_path(path)

    def drain_setting_errors(self) -> None:
        for err in self.settings.errors:
            self._log.config_error(err)
        for w in self.settings.warnings:
            self._log.log_warning(f"denpex: {w}")
        self.settings.errors.clear()
        self.settings.warnings.clear()

    def settings_changed(self) -> None:
        self.generation += 1
        self.drain_setting_errors()

    def set_folders(self, folders: list[str]) -> None:
        self.settings.set_folders(folders)
        self.paths.set_folders(folders)
        self.analyzer.set_folders(folders)

    # documents ---------------------------------------------------------------------------------

    def text_document(self, uri: str) -> TextDocument | None:
        return self._get_text(uri)

    def open_paths(self) -> list[str]:
        return [p for p in (path_of(u) for u in self.documents.docs) if p]

    def current(self, st: DocState) -> bool:
        doc = self.text_document(st.uri)
        return doc is not None and st.analysed_version == doc.version and st.settings_generation == self.generation

    def ensure_current(self, st: DocState) -> None:
        if not self.current(st):
            self.analyse(st)

    def analyse(self, st: DocState) -> None:
        """Bring `st` up to date with its document (synchronously)."""
        if st.notebook is not None:  # a notebook cell: the notebook's code cells are analysed as one program
            analyse_notebook(self, st.notebook, self._log.log_warning, self._log.log_exception)
            return
        doc = self.text_document(st.uri)
        if doc is None:
            return
        path = path_of(st.uri)
        settings = self.settings.for_path(path)
        self.drain_setting_errors()
        if st.kind is Kind.PYTHON:
            self._analyse_python(st, doc, path, settings)
        elif st.kind is Kind.LOG:
            self._analyse_log(st, doc, settings)
        st.analysed_version = doc.version
        st.settings_generation = self.generation

    def _analyse_python(self, st: DocState, doc: TextDocument, path: str | None, settings: Settings) -> None:
        findings: list[SourceFinding] = []
        if len(doc.source) > settings.max_file_bytes:
            self._log.log_warning(f"{st.uri}: larger than maxFileBytes ({settings.max_file_bytes}); not analysed")
        else:
            try:
                findings = self.analyzer.analyse(doc.source, path or st.uri, settings.config)
            except Exception:
                self._log.log_exception(f"source analysis failed for {st.uri}")
        lines, codec = doc.lines, doc.position_codec
        diags: list[types.Diagnostic] = []
        for f in findings:
            try:
                d = to_diagnostic(f, lines=lines, codec=codec, caps=self.caps, settings=settings,
                                  book=self.book, version=doc.version)
            except Exception:
                self._log.log_exception(f"rule {f.rule}: finding dropped")
                continue
            if d is not None:
                diags.append(d)
        st.findings, st.diagnostics = findings, diags

    def _analyse_log(self, st: DocState, doc: TextDocument, settings: Settings) -> None:
        st.diagnostics = []
        if not settings.log_documents or len(doc.source) > max(settings.max_file_bytes, 64 << 20):
            return
        try:
            dj = logs.diagnose(doc.source, self.book).to_json()
            mapped = logs.map_frames(dj, self.paths, self.open_paths())
            st.log_diagnosis = dj
            st.diagnostics = logs.log_document_diagnostics(
                dj, doc.lines, doc.position_codec, self.caps, settings, self.book, mapped)
        except Exception:
            self._log.log_exception(f"log diagnosis failed for {st.uri}")
