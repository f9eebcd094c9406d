"""Hover: the rule's explanation on a flagged range; a region summary on a capture opener."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import SCENARIO, open_doc, wait_diagnostics


async def hover(client: LanguageClient, doc_uri: str, line: int, character: int) -> types.Hover | None:
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri),
        position=types.Position(line=line, character=character)))


async def test_hover_on_finding_explains_rule(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, SCENARIO)
    diags = await wait_diagnostics(client, doc_uri, version=1)
    d = diags[0]
    h = await hover(client, doc_uri, d.range.start.line, d.range.start.character + 3)
    assert h is not None and isinstance(h.contents, types.MarkupContent)
    assert h.contents.kind == types.MarkupKind.Markdown
    md = h.contents.value
    for heading in ("### What fails, and why under capture", "### Fix", "### Eager fallback", "### Verify"):
        assert heading in md, md
    assert "DPX101" in md and "capture-item-sync" in md
    assert "denpex run --expect-absent capture-item-sync" in md
    assert h.range == d.range


async def test_hover_renders_the_rule_as_explain_does(client: LanguageClient) -> None:
    import subprocess
    import sys

    doc_uri, _ = open_doc(client, SCENARIO)
    d = (await wait_diagnostics(client, doc_uri, version=1))[0]
    h = await hover(client, doc_uri, d.range.start.line, d.range.start.character + 3)
    assert h is not None and isinstance(h.contents, types.MarkupContent)
    explain = subprocess.run([sys.executable, "-m", "denpex", "explain", "DPX101", "--format", "markdown"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    # the hover is explain's text without the sections only explain has, plus the finding's own message
    sections = [s for s in explain.split("\n### ") if not s.startswith(("Folklore", "Checklist", "Log signatures",
                                                                         "Verified on"))]
    head, *rest = sections
    assert h.contents.value.startswith(head.split("\n\n")[0])
    for s in rest:
        assert "### " + s.strip() in h.contents.value
    assert d.message in h.contents.value


async def test_hover_on_capture_opener_summarises_region(client: LanguageClient) -> None:
    doc_uri, text = open_doc(client, SCENARIO)
    await wait_diagnostics(client, doc_uri, version=1)
    line = next(i for i, s in enumerate(text.splitlines()) if s.startswith("with torch.cuda.graph(g)"))
    col = text.splitlines()[line].index("graph(")
    h = await hover(client, doc_uri, line, col + 1)
    assert h is not None and isinstance(h.contents, types.MarkupContent)
    md = h.contents.value
    assert "torch.cuda.graph" in md
    assert "Captures calls into:** `step`" in md, md
    assert "Hazards found (1)" in md and "DPX101 at line 9" in md


async def test_hover_elsewhere_is_empty(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, SCENARIO)
    await wait_diagnostics(client, doc_uri, version=1)
    assert await hover(client, doc_uri, 0, 2) is None  # the comment on line 1
