"""Tracebacks and logs: the denpex.diagnose command and .log documents."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import DATA, SCENARIO, open_doc, uri, wait_diagnostics

LOG = DATA / "01_item_in_capture.log"


async def diagnose(client: LanguageClient, *arguments: object) -> dict:  # type: ignore[type-arg]
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="denpex.diagnose", arguments=list(arguments)))
    assert isinstance(result, dict)
    return result


async def test_diagnose_command_maps_traceback_to_workspace_file(client: LanguageClient) -> None:
    # the log's frames name /workspace/gpu/scenarios/01_item_in_capture.py (a container path)
    text = LOG.read_text(encoding="utf-8")
    result = await diagnose(client, {"text": text, "uri": uri(LOG)})
    d = result["diagnosis"]
    assert d["schema"] == "denpex.diagnosis/1"
    assert d["verdict"]["rule"] == "capture-item-sync"
    assert "capture" in result["markdown"].lower() and result["markdown"].startswith("## ")
    assert [(loc["path"], loc["line"]) for loc in result["locations"]] == [
        (str(SCENARIO), 21), (str(SCENARIO), 8)]
    # published before the command's response; the file is not even open
    diags = list(client.diagnostics[uri(SCENARIO)])
    by_line = {x.range.start.line: x for x in diags}
    assert by_line[8].severity == types.DiagnosticSeverity.Error
    assert by_line[8].code == "DPX101"
    assert by_line[21].severity == types.DiagnosticSeverity.Information
    line = SCENARIO.read_text(encoding="utf-8").splitlines()[8]
    assert by_line[8].range.start.character == line.index("scale")
    # related information points back to the log line of the frame
    rel = by_line[8].related_information
    assert rel and rel[0].location.uri == uri(LOG) and rel[0].location.range.start.line == 4


async def test_diagnose_command_with_plain_text_and_open_file(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, SCENARIO)
    own = await wait_diagnostics(client, doc_uri, version=1)
    result = await diagnose(client, LOG.read_text(encoding="utf-8"))  # a terminal selection: no uri
    assert result["diagnosis"]["verdict"]["code"] == "DPX101"
    merged = list(client.diagnostics[doc_uri])  # published before the response
    assert len(merged) == len(own) + 2  # analyser finding + two traceback frames
    assert any(x.message.startswith("Host read of a GPU value") and "from traceback" in x.message for x in merged)


async def test_diagnose_command_without_a_verdict(client: LanguageClient) -> None:
    result = await diagnose(client, "hello\nnothing to see here\n")
    assert result["diagnosis"]["verdict"] is None
    assert result["locations"] == []


async def test_log_document_gets_diagnostics_and_hovers(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, LOG, language="log")
    diags = await wait_diagnostics(client, doc_uri, version=1)
    by_line = {x.range.start.line: x for x in diags}
    assert by_line[7].severity == types.DiagnosticSeverity.Error  # the initiating CUDA error
    assert "First failure" in by_line[7].message
    assert by_line[23].severity == types.DiagnosticSeverity.Information  # collateral: capture invalidated
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri), position=types.Position(line=7, character=5)))
    assert h is not None and isinstance(h.contents, types.MarkupContent)
    assert "Host read of a GPU value" in h.contents.value and "### Fix" in h.contents.value
    h2 = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri), position=types.Position(line=23, character=5)))
    assert h2 is not None and "cuda-901" in h2.contents.value  # type: ignore[union-attr]
