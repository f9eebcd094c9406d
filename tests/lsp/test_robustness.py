"""Never crash: unknown URIs, out-of-range positions, stale versions, cancellation, bad input, faults."""

from __future__ import annotations

import asyncio
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import (
    SCENARIO,
    WORKSPACE,
    finish,
    init_params,
    open_doc,
    replace_all,
    start,
    wait_diagnostics,
)

UNKNOWN = (WORKSPACE / "not_open.py").as_uri()


def hover_params(doc_uri: str, line: int, character: int) -> types.HoverParams:
    return types.HoverParams(text_document=types.TextDocumentIdentifier(uri=doc_uri),
                             position=types.Position(line=line, character=character))


async def test_unknown_uri_and_out_of_range_positions(client: LanguageClient) -> None:
    assert await client.text_document_hover_async(hover_params(UNKNOWN, 0, 0)) is None
    assert await client.text_document_hover_async(hover_params("untitled:Untitled-1", 0, 0)) is None
    assert await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=UNKNOWN),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[]))) is None
    doc_uri, _ = open_doc(client, SCENARIO)
    await wait_diagnostics(client, doc_uri, version=1)
    assert await client.text_document_hover_async(hover_params(doc_uri, 10_000, 0)) is None
    h = await client.text_document_hover_async(hover_params(doc_uri, 8, 10_000))  # past the line's end
    assert h is None or h.contents is not None


async def test_stale_and_unknown_changes(client: LanguageClient) -> None:
    doc_uri, text = open_doc(client, SCENARIO)
    await wait_diagnostics(client, doc_uri, version=1)
    replace_all(client, UNKNOWN, 7, "x = 1\n")  # change for a document never opened
    replace_all(client, doc_uri, 5, text)
    await wait_diagnostics(client, doc_uri, version=5)
    replace_all(client, doc_uri, 4, text.replace(".item()", ""))  # out-of-order version
    assert await wait_diagnostics(client, doc_uri, version=4) == []
    warnings = [m.message for m in client.log_messages if m.type == types.MessageType.Warning]
    assert any("not open" in w for w in warnings) and any("out-of-order" in w for w in warnings)


async def test_cancelled_request(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, SCENARIO)
    await wait_diagnostics(client, doc_uri, version=1)
    fut = client.protocol.send_request(types.TEXT_DOCUMENT_HOVER, hover_params(doc_uri, 8, 20), msg_id="cancel-me")
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="cancel-me"))
    try:  # answered or cancelled, depending on timing; either way the server carries on
        await asyncio.wait_for(asyncio.wrap_future(fut), 30)  # a loaded machine answers a first hover slowly
    except (Exception, asyncio.CancelledError) as exc:  # CancelledError is a BaseException
        assert "cancel" in str(exc).lower() or isinstance(exc, asyncio.CancelledError), exc
    h = await client.text_document_hover_async(hover_params(doc_uri, 8, 20))
    assert h is not None


async def test_bad_command_arguments_answer_an_error(client: LanguageClient) -> None:
    with pytest.raises(Exception, match="text"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="denpex.diagnose", arguments=[42]))
    with pytest.raises(Exception, match="not defined"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="denpex.nope"))
    client.expected_faults = True  # type: ignore[attr-defined]
    doc_uri, _ = open_doc(client, SCENARIO)  # still serving
    assert await wait_diagnostics(client, doc_uri, version=1)


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "denpex", "serve"],
    server_env={"DENPEX_LSP_FAULT_RULES": "capture-item-sync", "PATH": "/usr/bin:/bin"},
))
async def faulty_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    lsp_client.expected_faults = True  # type: ignore[attr-defined]
    await start(lsp_client, init_params("neovim@v0.7"))
    yield
    await finish(lsp_client)


async def test_failing_rule_loses_only_its_findings(faulty_client: LanguageClient) -> None:
    doc_uri, text = open_doc(faulty_client, SCENARIO)
    assert await wait_diagnostics(faulty_client, doc_uri, version=1) == []
    errors = [m.message for m in faulty_client.log_messages if m.type == types.MessageType.Error]
    assert any("rule capture-item-sync: finding dropped" in e for e in errors), errors
    assert faulty_client.messages == []  # logged, never shown
    replace_all(faulty_client, doc_uri, 2, text + "\n")
    assert await wait_diagnostics(faulty_client, doc_uri, version=2) == []  # still serving
