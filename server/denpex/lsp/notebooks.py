"""Notebook documents (LSP 3.17 `notebookDocument/*`): the code cells of an open notebook analysed as one
program, the findings handed back to the cells they lie in.

The client sends a notebook's Python cells as text documents of their own (`vscode-notebook-cell:` URIs);
pygls keeps their text. Each cell gets a `DocState` whose `notebook` names the notebook, so hovers and code
actions work on a cell as on a file; analysing any cell analyses its notebook (`DocumentService.analyse`).
A cell's diagnostics are always pushed (`publishDiagnostics`), also to a client that pulls: VS Code's client
(vscode-languageclient 9) pulls no notebook cells (microsoft/vscode-languageserver-node#1464; ruff's server
pushes them for the same reason, astral-sh/ruff#21156), and a pull for a cell is answered empty, so a client
that does pull cells shows each finding once. A fix is offered in a cell only when all its edits lie in that cell and spare
its magics (`denpex.notebook.fixes.cell_fix`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.diagnostics import to_diagnostic
from denpex.lsp.documents import Kind, path_of, to_lsp_range
from denpex.notebook.cells import CellProgram, CellSpan
from denpex.notebook.fixes import cell_fix
from denpex.source.model import CaptureSite, SourceFinding

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer
    from denpex.lsp.service import DocumentService

# what the server asks the client to sync: the Python cells of any notebook (VS Code's Jupyter notebooks
# are "jupyter-notebook"; other notebook types with Python cells work the same)
SYNC_OPTIONS = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")])],
    save=True,
)


@dataclass
class OpenNotebook:
    uri: str
    cells: list[str] = field(default_factory=list)  # URIs of the code cells, in notebook order
    version: int = 0
    pending: asyncio.Task[None] | None = None


class NotebookStore:
    def __init__(self) -> None:
        self.notebooks: dict[str, OpenNotebook] = {}


def code_cells(nb: types.NotebookDocument) -> list[str]:
    return [c.document for c in nb.cells if c.kind == types.NotebookCellKind.Code]


def sync(svc: DocumentService, nb: types.NotebookDocument) -> list[str]:
    """Bring the store's view of `nb` (pygls' copy, already updated) up to date: its code cells, one DocState
    each; cells no longer in it are forgotten (their URIs are returned)."""
    known = svc.notebooks.notebooks.get(nb.uri) or OpenNotebook(nb.uri)
    svc.notebooks.notebooks[nb.uri] = known
    cells = code_cells(nb)
    gone = [u for u in known.cells if u not in set(cells)]
    for uri in gone:
        svc.documents.close(uri)
    for uri in cells:
        st = svc.documents.get(uri)
        if st is None:
            st = svc.documents.open(uri, Kind.PYTHON, None)
        st.notebook = nb.uri
        st.analysed_version = None  # every cell's findings may change with any cell
    known.cells, known.version = cells, nb.version
    return gone


def forget(svc: DocumentService, nb_uri: str) -> list[str]:
    """Close the notebook; returns its cells' URIs."""
    nb = svc.notebooks.notebooks.pop(nb_uri, None)
    cells = nb.cells if nb is not None else []
    if nb is not None and nb.pending is not None:
        nb.pending.cancel()
    for uri in cells:
        svc.documents.close(uri)
    return cells


def _in_cell(span: CellSpan, f: SourceFinding, site: CaptureSite | None) -> SourceFinding:
    """A program finding in its cell's coordinates (fixes that leave the cell dropped)."""
    last = span.n_lines - 1
    el, ec = f.end_line - span.first_line, f.end_col
    if el > last:
        el, ec = last, len(span.source.split("\n")[-1])
    return replace(f, start_line=f.start_line - span.first_line, end_line=el, end_col=ec, capture_site=site)


def analyse(svc: DocumentService, nb_uri: str, log_warning: Callable[[str], None],
            log_exception: Callable[[str], None]) -> None:
    """Analyse the notebook's code cells as one program; set every cell's findings and diagnostics."""
    nb = svc.notebooks.notebooks.get(nb_uri)
    if nb is None:
        return
    docs = [(uri, svc.text_document(uri)) for uri in nb.cells]
    present = [(uri, d) for uri, d in docs if d is not None and (d.language_id or "python") == "python"]
    program = CellProgram([(i, d.source) for i, (_u, d) in enumerate(present, start=1)])
    cell_uri = {i: u for i, (u, _d) in enumerate(present, start=1)}
    path = path_of(nb_uri) or nb_uri
    settings = svc.settings_for(nb_uri)
    findings: list[SourceFinding] = []
    if len(program.text) > settings.max_file_bytes:
        log_warning(f"{nb_uri}: larger than maxFileBytes ({settings.max_file_bytes}); not analysed")
    else:
        try:
            findings = svc.analyzer.analyse(program.text, path, settings.config)
        except Exception:
            log_exception(f"source analysis failed for {nb_uri}")
    per_cell: dict[str, list[tuple[SourceFinding, tuple[str, int, str] | None]]] = {u: [] for u in cell_uri.values()}
    for f in findings:
        span = program.span_at(f.start_line)
        if span is None:
            continue
        site_at: tuple[str, int, str] | None = None
        own_site: CaptureSite | None = None
        if f.capture_site is not None and f.capture_site.path == f.path:
            sp = program.span_at(f.capture_site.line)
            if sp is not None:
                site_at = (cell_uri[sp.cell], f.capture_site.line - sp.first_line, f.capture_site.kind)
                if sp is span:
                    own_site = replace(f.capture_site, line=site_at[1])
        fixes = tuple(x for fx in f.fixes if (placed := cell_fix(program, fx)) is not None and placed[0] == span.cell
                      for x in [placed[1]])
        sup = cell_fix(program, f.suppression) if f.suppression is not None else None
        cf = replace(_in_cell(span, f, own_site), fixes=fixes,
                     suppression=sup[1] if sup is not None and sup[0] == span.cell else None)
        per_cell[cell_uri[span.cell]].append((cf, site_at))
    for uri, doc in present:
        st = svc.documents.get(uri)
        if st is None:
            continue
        diags: list[types.Diagnostic] = []
        for cf, site_at in per_cell[uri]:
            try:
                d = to_diagnostic(replace(cf, capture_site=None), lines=doc.lines, codec=doc.position_codec,
                                  caps=svc.caps, settings=settings, book=svc.book, version=doc.version)
            except Exception:
                log_exception(f"rule {cf.rule}: finding dropped")
                continue
            if d is None:
                continue
            if svc.caps.related_information and site_at is not None:
                d.related_information = _site_info(svc, cf, site_at)
            diags.append(d)
        st.findings, st.diagnostics = [cf for cf, _s in per_cell[uri]], diags
        st.analysed_version = doc.version
        st.settings_generation = svc.generation


def _site_info(svc: DocumentService, f: SourceFinding, site_at: tuple[str, int, str],
               ) -> list[types.DiagnosticRelatedInformation]:
    """The capture's line, in the cell that opens it."""
    uri, line, kind = site_at
    doc = svc.text_document(uri)
    rng = (to_lsp_range(doc.lines, doc.position_codec, line, 0, line, 10_000) if doc is not None
           else types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)))
    via = f" via {' -> '.join(f.via)}" if f.via else ""
    return [types.DiagnosticRelatedInformation(location=types.Location(uri=uri, range=rng),
                                               message=f"capture opened here ({kind}){via}")]


# ---- running analyses for the server ---------------------------------------------------------------------------
def refresh(ls: DenpexLanguageServer, nb_uri: str) -> None:
    """Analyse now and push every cell's diagnostics."""
    svc = ls.service
    analyse(svc, nb_uri, ls.log_warning, ls.log_exception)
    nb = svc.notebooks.notebooks.get(nb_uri)
    if nb is None:
        return
    for uri in nb.cells:
        ls.publish(uri)


def schedule(ls: DenpexLanguageServer, nb_uri: str, delay_ms: int) -> None:
    nb = ls.service.notebooks.notebooks.get(nb_uri)
    if nb is None:
        return
    if nb.pending is not None and not nb.pending.done():
        nb.pending.cancel()
    nb.pending = asyncio.ensure_future(_later(ls, nb_uri, delay_ms))


async def _later(ls: DenpexLanguageServer, nb_uri: str, delay_ms: int) -> None:
    try:
        await asyncio.sleep(delay_ms / 1000 if delay_ms else 0)
        refresh(ls, nb_uri)
    except asyncio.CancelledError:
        pass
    except Exception:
        ls.log_exception(f"diagnostics failed for {nb_uri}")


def clear(ls: DenpexLanguageServer, cells: list[str]) -> None:
    """Empty diagnostics for cells that left (the client keeps the last ones pushed otherwise)."""
    for uri in cells:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
