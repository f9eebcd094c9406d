"""Show the way in the editor (issue 11): a finding in a file the capture reaches through calls carries, as
related information, the capture site and each call on the way, and its hover lists them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import SERVER, finish, start, uri, wait_until

PROJECT = {
    "layers.py": """\
        import torch
        from torch import nn


        class Block(nn.Module):
            def forward(self, x):
                s = x.sum().item()
                return x / s
        """,
    "model.py": """\
        from torch import nn
        from layers import Block


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block(), Block()])

            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                return x
        """,
    "train.py": """\
        import torch
        from model import Net

        model = Net().cuda()
        x = torch.randn(4, 8, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = model(x)
        """,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in PROJECT.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def vscode(lsp_client: LanguageClient, project: Path):  # type: ignore[no-untyped-def]
    lsp_client.profile = "visual-studio-code"  # type: ignore[attr-defined]
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        workspace_folders=[types.WorkspaceFolder(uri=uri(project), name="project")],
        root_uri=uri(project), initialization_options={"debounceMs": 0})
    await start(lsp_client, params)
    lsp_client.project = project  # type: ignore[attr-defined]
    yield
    await finish(lsp_client)


async def test_related_information_and_hover_show_the_calls(vscode: LanguageClient) -> None:
    project: Path = vscode.project  # type: ignore[attr-defined]
    path = project / "layers.py"
    doc_uri = uri(path)
    vscode.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=doc_uri, language_id="python", version=1, text=path.read_text(encoding="utf-8"))))
    # the first publish may come before the workspace is indexed; the capture in train.py then reaches it
    diags = await wait_until(vscode, doc_uri, lambda ds: any(d.code == "DPX101" for d in ds))
    item = [d for d in diags if d.code == "DPX101"]
    assert item, diags
    rel = item[0].related_information or []
    where = [(Path(uris_path(r.location.uri)).name, r.location.range.start.line) for r in rel]
    assert where == [("train.py", 6), ("train.py", 7), ("model.py", 11)], [r.message for r in rel]
    assert "capture opened here" in rel[0].message
    assert rel[1].message.startswith("call 1 of 2") and "Net.forward" in rel[1].message
    assert "Block.forward" in rel[2].message
    hover = await vscode.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri), position=item[0].range.start))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert "Runs under capture through" in text
    assert "`train.py:7`" in text and "`train.py:8` calls `model -> Net.forward`" in text
    assert "`model.py:12` calls `b -> Block.forward`" in text


def uris_path(u: str) -> str:
    from pygls import uris

    p = uris.to_fs_path(u)
    assert p is not None
    return p
