"""Settings: initializationOptions, didChangeConfiguration and [tool.denpex] per workspace folder."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import (
    SCENARIO,
    WORKSPACE2,
    config_errors,
    finish,
    init_params,
    open_doc,
    start,
    wait_diagnostics,
    wait_until,
)


async def test_pyproject_severity_applies_to_its_folder(client: LanguageClient) -> None:
    # workspace2/pyproject.toml: [tool.denpex] severity = { capture-item-sync = "warning" }
    doc_uri, _ = open_doc(client, WORKSPACE2 / "pkg" / "train.py")
    diags = await wait_diagnostics(client, doc_uri, version=1)
    assert [d.severity for d in diags] == [types.DiagnosticSeverity.Warning]
    other, _ = open_doc(client, SCENARIO)  # the other folder keeps the rule's own severity
    assert [d.severity for d in await wait_diagnostics(client, other, version=1)] == [
        types.DiagnosticSeverity.Error]


async def test_did_change_configuration_reanalyses(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, SCENARIO)
    assert await wait_diagnostics(client, doc_uri, version=1)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"denpex": {"severity": {"DPX1": "hint"}}}))
    diags = await wait_until(client, doc_uri, lambda ds: [d.severity for d in ds] == [types.DiagnosticSeverity.Hint])
    assert len(diags) == 1
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"denpex": {"ignore": ["capture-item-sync"]}}))
    assert await wait_until(client, doc_uri, lambda ds: ds == []) == []


async def test_graphed_callables_setting_opens_captures(client: LanguageClient) -> None:
    text = ("import torch\nfrom mylib.graphs import graphed\n\n\ndef body(x):\n    return x.item()\n\n\n"
            "g = graphed(body)\n")
    doc_uri, _ = open_doc(client, WORKSPACE2 / "pkg" / "graphed_unsaved.py", text)
    assert await wait_diagnostics(client, doc_uri, version=1) == []
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"denpex": {"graphedCallables": ["mylib.graphs.graphed"]}}))
    diags = await wait_until(client, doc_uri, lambda ds: len(ds) == 1)
    assert diags[0].code == "DPX101" and diags[0].range.start.line == 5


async def test_invalid_settings_are_errors_and_the_server_keeps_serving(client: LanguageClient) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"denpex": {"run": "sometimes", "severity": {"DPX101": "loud"}, "select": ["NOPE999"]}}))
    doc_uri, _ = open_doc(client, SCENARIO)
    # the bad values are ignored (defaults used), so the finding is still reported
    diags = await wait_until(client, doc_uri, lambda ds: [d.code for d in ds] == ["DPX101"])
    assert diags[0].severity == types.DiagnosticSeverity.Error
    errors = await config_errors(client, 3)
    assert sorted(errors) == [
        "editor settings run must be 'onType' or 'onSave'",
        "editor settings select: unknown rule 'NOPE999' (see `denpex rules`)",
        "editor settings severity DPX101: must be one of error, warning, info, hint, off",
    ], errors


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "denpex", "serve"]))
async def onsave_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await start(lsp_client, init_params("visual-studio-code", {"denpex": {"run": "onSave"}}))
    yield
    await finish(lsp_client)


@pytest.mark.parametrize("profile", ["visual-studio-code"])
async def test_initialization_options(onsave_client: LanguageClient, profile: str) -> None:
    doc_uri, text = open_doc(onsave_client, SCENARIO)
    assert await wait_diagnostics(onsave_client, doc_uri, version=1)
    onsave_client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=doc_uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text.replace(".item()", ""))]))
    onsave_client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri)))
    assert await wait_diagnostics(onsave_client, doc_uri, version=2) == []
