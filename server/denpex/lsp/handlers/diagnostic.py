"""`textDocument/diagnostic` (pull): registered at `initialize` only for a client that pulls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from denpex.lsp.diagnostics import for_client
from denpex.lsp.handlers.guard import guarded

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

METHOD = types.TEXT_DOCUMENT_DIAGNOSTIC
OPTIONS = types.DiagnosticOptions(identifier="denpex", inter_file_dependencies=True, workspace_diagnostics=False)

Report = types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport
_EMPTY: Report = types.RelatedFullDocumentDiagnosticReport(items=[])


@guarded(_EMPTY)
def handle(ls: DenpexLanguageServer, params: types.DocumentDiagnosticParams) -> Report:
    svc = ls.service
    uri = params.text_document.uri
    st = svc.documents.get(uri)
    doc = svc.text_document(uri)
    tb = svc.traceback_diags.get(uri, [])
    if st is None or doc is None:
        return types.RelatedFullDocumentDiagnosticReport(items=for_client(tb, svc.caps))
    svc.ensure_current(st)
    if st.notebook is not None:  # a notebook cell: its diagnostics are pushed (see lsp/notebooks.py)
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    result_id = f"{doc.version}:{svc.generation}:{svc.traceback_generation}"
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(
        items=for_client([*st.diagnostics, *tb], svc.caps), result_id=result_id)
