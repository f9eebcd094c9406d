"""Open, edit, save and close: push diagnostics tied to document versions."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import SCENARIO, WORKSPACE, open_doc, replace_all, wait_diagnostics, wait_until

ITEM_LINE = 8  # 0-based: `scale = y.abs().max().item()` in 01_item_in_capture.py
CAPTURE_LINE = 20  # `with torch.cuda.graph(g):`


async def test_open_gives_diagnostics(client: LanguageClient) -> None:
    doc_uri, text = open_doc(client, SCENARIO)
    diags = await wait_diagnostics(client, doc_uri, version=1)
    item = [d for d in diags if d.range.start.line == ITEM_LINE]
    assert item, diags
    d = item[0]
    assert d.source == "denpex"
    assert d.code == "DPX101"
    assert d.severity == types.DiagnosticSeverity.Error
    line = text.splitlines()[ITEM_LINE]
    assert line[d.range.start.character:d.range.end.character].endswith(".item()")
    # the capture site as related information
    assert d.related_information
    assert d.related_information[0].location.range.start.line == CAPTURE_LINE
    assert "capture" in d.related_information[0].message
    # nothing flagged outside the capture (warm-up calls step() on a side stream)
    assert all(x.range.start.line == ITEM_LINE for x in diags)
    profile = client.profile  # type: ignore[attr-defined]
    if profile.startswith("visual-studio-code"):
        assert d.code_description is not None and d.code_description.href
        assert isinstance(d.data, dict) and d.data["fixes"]
    else:  # Neovim 0.7 declares neither codeDescriptionSupport nor dataSupport
        assert d.code_description is None
        assert d.data is None


async def test_edit_updates_diagnostics(client: LanguageClient) -> None:
    doc_uri, text = open_doc(client, SCENARIO)
    assert await wait_diagnostics(client, doc_uri, version=1)
    fixed = text.replace("y.abs().max().item()", "y.abs().max()")
    replace_all(client, doc_uri, 2, fixed)
    assert await wait_diagnostics(client, doc_uri, version=2) == []
    # incremental change re-introducing the hazard
    line = fixed.splitlines()[ITEM_LINE]
    col = line.index("y.abs().max()") + len("y.abs().max()")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=doc_uri, version=3),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=ITEM_LINE, character=col),
                              end=types.Position(line=ITEM_LINE, character=col)),
            text=".item()")],
    ))
    diags = await wait_diagnostics(client, doc_uri, version=3)
    assert [d.range.start.line for d in diags] == [ITEM_LINE]


async def test_positions_are_utf16(client: LanguageClient) -> None:
    text = SCENARIO.read_text(encoding="utf-8").replace(
        "    scale = y.abs().max().item()", '    s = "😀é"; scale = y.abs().max().item()')
    doc_uri, _ = open_doc(client, WORKSPACE / "utf16_case.py", text)
    diags = await wait_diagnostics(client, doc_uri, version=1)
    line = text.splitlines()[ITEM_LINE]
    start_cp = line.index("y.abs()")
    # the emoji is one code point but two UTF-16 code units
    assert diags[0].range.start.character == start_cp + 1
    assert diags[0].range.end.character == len(line[: line.index(".item()") + 7]) + 1


async def test_close_clears_diagnostics(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, SCENARIO)
    assert await wait_diagnostics(client, doc_uri, version=1)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri)))
    assert await wait_until(client, doc_uri, lambda ds: ds == []) == []


@pytest.mark.parametrize("run", ["onSave"])
async def test_on_save_mode(client: LanguageClient, run: str) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"denpex": {"run": run, "debounceMs": 0}}))
    doc_uri, text = open_doc(client, SCENARIO)
    assert await wait_diagnostics(client, doc_uri, version=1)
    replace_all(client, doc_uri, 2, text.replace(".item()", ""))
    # no analysis on change in onSave mode: prove it by saving and seeing version 2 only then
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri)))
    assert await wait_diagnostics(client, doc_uri, version=2) == []
