"""One configuration for `denpex scan` and the language server: the same `[tool.denpex]` gives the
same result, and the same error text, in both; the editor settings take the same keys.

The CLI runs as a subprocess; the server through pytest-lsp, on a workspace folder made per test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import SERVER, config_errors, finish, open_doc, start, uri, wait_diagnostics

DEEP = """import torch

x = torch.randn(4, device="cuda")


def c(t):
    return t.sum().item()


def b(t):
    return c(t)


def a(t):
    return b(t)


g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = a(x)
"""
ITEM_LINE = 6  # 0-based line of .item(), three calls below the capture


def scan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "denpex", "scan", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (ws / "deep.py").write_text(DEEP)
    return ws


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def bare(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """A started server that the test initializes itself (after writing its pyproject.toml)."""
    yield lsp_client


async def initialize(client: LanguageClient, folder: Path, options: dict[str, object] | None = None) -> None:
    await start(client, types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        workspace_folders=[types.WorkspaceFolder(uri=uri(folder), name="ws")],
        root_uri=uri(folder),
        initialization_options={"settings": {"debounceMs": 0, **(options or {})}},
    ))


def pyproject(folder: Path, body: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text("[project]\nname = 'x'\nversion = '0'\n\n[tool.denpex]\n" + body + "\n")
    return path


BAD = {
    "prefix-of-ids": ('select = ["capture-"]', "select: unknown rule 'capture-' (see `denpex rules`)"),
    "empty-selection": ('select = ["DPX101"]\nignore = ["capture-item-sync"]',
                        "select and ignore: no rule is left to report"),
    "editor-key": ('run = "onSave"\nbogus = 1', "unknown key(s): bogus, run (run: editor settings only)"),
    "not-a-list": ('graphed-callables = "mylib.graphs.graphed"', "graphed-callables must be a list of strings"),
    "negative-depth": ("max-depth = -1", "max-depth must be a non-negative integer"),
    "bad-severity": ('severity = { DPX101 = "loud" }',
                     "severity DPX101: must be one of error, warning, info, hint, off"),
}


@pytest.mark.parametrize("case", sorted(BAD))
async def test_bad_pyproject_same_error_in_scan_and_server(bare: LanguageClient, folder: Path, case: str) -> None:
    body, problem = BAD[case]
    path = pyproject(folder, body)
    expected = f"{path}: [tool.denpex] {problem}"
    cli = scan(folder, "deep.py")
    assert cli.returncode == 2 and cli.stdout == "", (cli.returncode, cli.stdout, cli.stderr)
    assert cli.stderr == f"denpex: error: {expected}\n"

    await initialize(bare, folder)
    doc_uri, _ = open_doc(bare, folder / "deep.py")
    diags = await wait_diagnostics(bare, doc_uri, version=1)
    assert await config_errors(bare, 1) == [expected]
    # the server keeps serving: the bad value is not used, the defaults are, and requests are answered
    assert [(d.code, d.range.start.line) for d in diags] == [("DPX101", ITEM_LINE)]
    hover = await bare.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri), position=diags[0].range.start))
    assert hover is not None
    await finish(bare)


async def test_unsafe_fixes_in_pyproject_counts_for_both(bare: LanguageClient, folder: Path) -> None:
    pyproject(folder, "unsafe-fixes = true")
    fixed = scan(folder, "--fix", "deep.py")
    assert fixed.returncode == 0, (fixed.stdout, fixed.stderr)  # the unsafe fix was applied, nothing remains
    assert (folder / "deep.py").read_text() == DEEP.replace("t.sum().item()", "t.sum()")  # the unsafe fix
    (folder / "deep.py").write_text(DEEP)

    await initialize(bare, folder)
    doc_uri, _ = open_doc(bare, folder / "deep.py")
    diags = await wait_diagnostics(bare, doc_uri, version=1)
    actions = await bare.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri), range=diags[0].range,
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.denpex"])))
    assert [a.title for a in actions or [] if isinstance(a, types.CodeAction)] == [
        "Denpex: apply all fixes (including unsafe)"]
    await finish(bare)


async def test_without_unsafe_fixes_scan_fix_leaves_the_unsafe_fix(folder: Path) -> None:
    fixed = scan(folder, "--fix", "deep.py")
    assert fixed.returncode == 1 and (folder / "deep.py").read_text() == DEEP


@pytest.mark.parametrize(("where", "depth", "found"), [
    ("pyproject", 2, 0), ("pyproject", 3, 1), ("editor", 2, 0), ("editor", 3, 1)])
async def test_max_depth_is_honoured_by_both(bare: LanguageClient, folder: Path, where: str, depth: int,
                                             found: int) -> None:
    options: dict[str, object] = {}
    if where == "pyproject":
        pyproject(folder, f"max-depth = {depth}")
        cli = scan(folder, "--format", "json", "deep.py")
        assert cli.returncode == (1 if found else 0), cli.stderr
        assert cli.stdout.count('"rule": "capture-item-sync"') == found
    else:
        options["maxDepth"] = depth
    await initialize(bare, folder, options)
    doc_uri, _ = open_doc(bare, folder / "deep.py")
    assert len(await wait_diagnostics(bare, doc_uri, version=1)) == found
    await finish(bare)


async def test_editor_selection_that_resolves_to_nothing_is_an_error(bare: LanguageClient, folder: Path) -> None:
    await initialize(bare, folder, {"select": ["capture-"]})
    doc_uri, _ = open_doc(bare, folder / "deep.py")
    diags = await wait_diagnostics(bare, doc_uri, version=1)
    assert await config_errors(bare, 1) == ["editor settings select: unknown rule 'capture-' (see `denpex rules`)"]
    assert [d.code for d in diags] == ["DPX101"]  # every rule, not silently none
    bare.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"denpex": {"debounceMs": 0, "select": ["DPX101"], "ignore": ["DPX1"]}}))
    assert await config_errors(bare, 1) == ["editor settings select and ignore: no rule is left to report"]
    await finish(bare)
