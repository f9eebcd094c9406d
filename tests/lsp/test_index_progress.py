"""The background workspace index (issue 20): the open file's diagnostics come first, the index reports
`$/progress` (begin ... end) to a client that shows it, and the open documents are refreshed once after it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import finish, open_doc, start, uri, wait_diagnostics

MODULES = 300
HELPER = "def scale_of(t):\n    m = t.abs().max()\n    return m.item()\n"
# its own .item() in the capture is found from the file alone; helper.py's only once the index holds helper.py
TRAIN = ("import torch\n\nfrom helper import scale_of\n\n\ndef step(x):\n    g = torch.cuda.CUDAGraph()\n"
         "    with torch.cuda.graph(g):\n        y = x * scale_of(x)\n        n = x.sum().item()\n    g.replay()\n"
         "    return y, n\n")


def _project(root: Path) -> Path:
    """A folder of MODULES plain modules, helper.py (an .item() in a function) and train.py capturing it."""
    root.mkdir()
    for i in range(MODULES):
        body = "".join(f"def f{i}_{k}(a, b):\n    return a * {k} + b\n\n\n" for k in range(20))
        (root / f"mod_{i:03d}.py").write_text(f"import os\n\n\n{body}")
    (root / "helper.py").write_text(HELPER)
    (root / "train.py").write_text(TRAIN)
    return root


def _params(root: Path, profile: str = "visual-studio-code",
            caps: types.ClientCapabilities | None = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=caps or client_capabilities(profile),
        workspace_folders=[types.WorkspaceFolder(uri=uri(root), name=root.name)],
        root_uri=uri(root), initialization_options={"debounceMs": 0})


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "denpex", "serve"]))  # type: ignore[untyped-decorator]
async def bare(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    yield
    await finish(lsp_client)


async def _progress_end(client: LanguageClient, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not any(kind == "end" for _t, kind, _n in client.__dict__.get("progress_log", [])):
        assert loop.time() < deadline, "no progress end"
        await asyncio.sleep(0.02)


async def test_progress_begins_and_ends_after_the_open_file_s_diagnostics(bare: LanguageClient,
                                                                         tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    await start(bare, _params(root))
    doc_uri, _ = open_doc(bare, root / "train.py")
    assert [d.code for d in await wait_diagnostics(bare, doc_uri, version=1)] == ["DPX101"]
    await _progress_end(bare)
    log = bare.__dict__["progress_log"]
    tokens = {t for t, _k, _n in log}
    assert len(tokens) == 1, log
    (token,) = tokens
    kinds = [k for _t, k, _n in log]
    assert kinds[0] == "begin" and kinds[-1] == "end" and set(kinds[1:-1]) <= {"report"}, kinds
    begin = bare.progress_reports[token][0]
    assert isinstance(begin, types.WorkDoneProgressBegin)
    assert begin.title == f"Denpex: indexing {MODULES + 1} files"  # helper.py too; train.py is open
    published = bare.__dict__["published_log"]
    end_at = log[-1][2]
    assert any(p.uri == doc_uri and p.version == 1 for p in published[:end_at]), "diagnostics came after the end"
    await asyncio.sleep(1.0)
    after = [p for p in published[end_at:] if p.uri == doc_uri]
    assert len(after) <= 1, after  # the open document is refreshed once (it may come just before the end)


async def test_the_index_refreshes_a_file_that_a_capture_elsewhere_reaches(bare: LanguageClient,
                                                                          tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    await start(bare, _params(root))
    doc_uri, _ = open_doc(bare, root / "helper.py")
    await wait_diagnostics(bare, doc_uri, version=1)  # from what the index knew then (maybe nothing yet)
    await _progress_end(bare)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not bare.diagnostics.get(doc_uri):
        assert loop.time() < deadline, "the reached file was never refreshed with the capture's finding"
        await asyncio.sleep(0.05)
    assert [d.code for d in bare.diagnostics[doc_uri]] == ["DPX101"]


async def test_no_progress_without_the_capability(bare: LanguageClient, tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    caps = client_capabilities("visual-studio-code")
    caps.window = types.WindowClientCapabilities(work_done_progress=False)
    await start(bare, _params(root, caps=caps))
    doc_uri, _ = open_doc(bare, root / "train.py")
    assert [d.code for d in await wait_diagnostics(bare, doc_uri, version=1)] == ["DPX101"]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while not any("workspace files" in m.message for m in bare.log_messages):
        assert loop.time() < deadline, "the index never completed"
        await asyncio.sleep(0.05)
    assert bare.progress_reports == {}
