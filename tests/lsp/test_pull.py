"""Pull diagnostics (textDocument/diagnostic) for clients that declare them; no push then."""

from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import SCENARIO, finish, init_params, open_doc, start


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "denpex", "serve"]))
async def pull_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    caps = client_capabilities("visual-studio-code")
    assert caps.text_document is not None
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities(related_document_support=True)
    result = await start(lsp_client, init_params("visual-studio-code", capabilities=caps))
    lsp_client.init_result = result  # type: ignore[attr-defined]
    yield
    await finish(lsp_client)


async def test_pull_diagnostics(pull_client: LanguageClient) -> None:
    provider = pull_client.init_result.capabilities.diagnostic_provider  # type: ignore[attr-defined]
    assert provider is not None
    doc_uri, _ = open_doc(pull_client, SCENARIO)
    report = await pull_client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri)))
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert [d.code for d in report.items] == ["DPX101"]
    again = await pull_client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri), previous_result_id=report.result_id))
    assert isinstance(again, types.RelatedUnchangedDocumentDiagnosticReport)
    assert doc_uri not in pull_client.diagnostics  # nothing pushed to a pull client


async def test_push_clients_see_no_diagnostic_provider() -> None:
    # the captured VS Code 1.65 / Neovim 0.7 profiles do not declare pull diagnostics
    assert client_capabilities("neovim@v0.7").text_document.diagnostic is None  # type: ignore[union-attr]
