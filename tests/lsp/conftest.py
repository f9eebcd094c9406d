"""pytest-lsp fixtures: `denpex serve` under the VS Code 1.65 and Neovim 0.7 client profiles."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
import pytest_lsp.client
from lsprotocol import types
from pygls import uris
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
WORKSPACE2 = HERE / "workspace2"
DATA = HERE / "data"
SCENARIO = WORKSPACE / "gpu" / "scenarios" / "01_item_in_capture.py"
SERVER = [sys.executable, "-m", "denpex", "serve"]
PROFILES = ["visual-studio-code", "neovim@v0.7"]


_default_publish = pytest_lsp.client.DEFAULT_CLIENT_FEATURES[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]


def _record_publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
    # Every publish is kept in order, so a test never misses one that arrived before it started
    # waiting (a race under load when waiting on the notification itself).
    log: list[types.PublishDiagnosticsParams] = client.__dict__.setdefault("published_log", [])
    log.append(params)
    _default_publish(client, params)


pytest_lsp.client.DEFAULT_CLIENT_FEATURES[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _record_publish

_default_progress = pytest_lsp.client.DEFAULT_CLIENT_FEATURES[types.PROGRESS]


def _record_progress(client: LanguageClient, params: types.ProgressParams) -> None:
    # (token, kind, how many publishes had come by then): the order of progress and diagnostics as the client saw it
    log: list[tuple[object, object, int]] = client.__dict__.setdefault("progress_log", [])
    kind = params.value.get("kind") if isinstance(params.value, dict) else None
    log.append((params.token, kind, len(client.__dict__.setdefault("published_log", []))))
    _default_progress(client, params)


pytest_lsp.client.DEFAULT_CLIENT_FEATURES[types.PROGRESS] = _record_progress


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Specification warnings from pytest-lsp are failures in this folder."""
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"))


def uri(path: Path) -> str:
    u = uris.from_fs_path(str(path))
    assert u is not None
    return u


def init_params(profile: str, options: dict[str, Any] | None = None,
                capabilities: types.ClientCapabilities | None = None) -> types.InitializeParams:
    folders = [types.WorkspaceFolder(uri=uri(WORKSPACE), name="workspace"),
               types.WorkspaceFolder(uri=uri(WORKSPACE2), name="workspace2")]
    return types.InitializeParams(
        capabilities=capabilities or client_capabilities(profile),
        workspace_folders=folders,
        root_uri=uri(WORKSPACE),
        initialization_options=options if options is not None else {"debounceMs": 0},
    )


async def start(lsp_client: LanguageClient, params: types.InitializeParams) -> types.InitializeResult:
    registrations: list[types.RegistrationParams] = []
    lsp_client.registrations = registrations  # type: ignore[attr-defined]

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:  # what VS Code answers
        registrations.append(params)

    result = await lsp_client.initialize_session(params)
    return result


async def config_errors(client: LanguageClient, count: int, timeout: float = 10.0) -> list[str]:
    """The configuration errors the server logged (window/logMessage, type Error, "denpex: ..."), once
    `count` have come; they are then taken out of the client's record, so `finish` still fails on any
    other error (and on any window/showMessage)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    prefix = "denpex: "
    logged: list[types.LogMessageParams] = []
    while loop.time() < deadline:
        logged = [m for m in client.log_messages if m.type == types.MessageType.Error and m.message.startswith(prefix)]
        if len(logged) >= count:
            break
        await asyncio.sleep(0.01)
    for m in logged:
        client.log_messages.remove(m)
    return [m.message[len(prefix):] for m in logged]


async def finish(lsp_client: LanguageClient) -> None:
    # the server reports its own faults through window/logMessage, never window/showMessage
    assert lsp_client.messages == [], [m.message for m in lsp_client.messages]
    errors = [m.message for m in lsp_client.log_messages if m.type == types.MessageType.Error]
    expected_faults = getattr(lsp_client, "expected_faults", False)
    if not expected_faults:
        assert errors == [], errors
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(params=PROFILES, config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    lsp_client.profile = request.param  # type: ignore[attr-defined]
    await start(lsp_client, init_params(request.param))
    yield
    await finish(lsp_client)


async def wait_diagnostics(client: LanguageClient, doc_uri: str, version: int | None = None,
                           timeout: float = 20.0) -> list[types.Diagnostic]:
    """The first diagnostics for `doc_uri` (at `version`, when given) published after this call.

    The position in the publish log is taken before the first await, so a publish that the
    client's reader handles while this coroutine is being scheduled is still seen.
    """
    log: list[types.PublishDiagnosticsParams] = client.__dict__.setdefault("published_log", [])
    start = len(log)
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for params in log[start:]:
            if params.uri == doc_uri and (version is None or params.version == version):
                return list(params.diagnostics)
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"no diagnostics for {doc_uri} (version {version}) within {timeout} s")
        await asyncio.sleep(0.01)


async def wait_until(client: LanguageClient, doc_uri: str,
                     predicate: Callable[[list[types.Diagnostic]], bool], timeout: float = 20.0,
                     settle: float = 0.3) -> list[types.Diagnostic]:
    """Diagnostics for `doc_uri` once the latest publish after this call satisfies `predicate`
    and stays that way for `settle` seconds (a publish the server sent before it read our last
    message may still arrive first; the final state is what a user sees)."""
    log: list[types.PublishDiagnosticsParams] = client.__dict__.setdefault("published_log", [])
    start = len(log)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    ok_since: float | None = None
    while loop.time() < deadline:
        mine = [p for p in log[start:] if p.uri == doc_uri]
        if mine and predicate(list(mine[-1].diagnostics)):
            ok_since = ok_since if ok_since is not None else loop.time()
            if loop.time() - ok_since >= settle:
                return list(mine[-1].diagnostics)
        else:
            ok_since = None
        await asyncio.sleep(0.01)
    mine = [p for p in log[start:] if p.uri == doc_uri]
    raise TimeoutError(f"diagnostics for {doc_uri} never settled on the expected state: "
                       f"{[list(p.diagnostics) for p in mine][-2:]}")


def open_doc(client: LanguageClient, path: Path, text: str | None = None, language: str = "python",
             version: int = 1) -> tuple[str, str]:
    text = path.read_text(encoding="utf-8") if text is None else text
    doc_uri = uri(path)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=doc_uri, language_id=language, version=version, text=text)))
    return doc_uri, text


def replace_all(client: LanguageClient, doc_uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=doc_uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))


def _offset(lines: list[str], pos: types.Position) -> int:
    """UTF-16 position -> string offset."""
    off = sum(len(line) for line in lines[: pos.line])
    if pos.line >= len(lines):
        return off
    units = 0
    for i, ch in enumerate(lines[pos.line]):
        if units >= pos.character:
            return off + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return off + len(lines[pos.line].rstrip("\r\n"))


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    spans = sorted(((_offset(lines, e.range.start), _offset(lines, e.range.end), e.new_text) for e in edits),
                   reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_of(edit: types.WorkspaceEdit | None, doc_uri: str, profile: str) -> list[types.TextEdit]:
    """The edits for `doc_uri`, checking the shape matches what the client declared."""
    assert edit is not None
    caps = client_capabilities(profile)
    doc_changes = bool(caps.workspace and caps.workspace.workspace_edit
                       and caps.workspace.workspace_edit.document_changes)
    if doc_changes:
        assert edit.document_changes, "client supports documentChanges: expected them"
        out: list[types.TextEdit] = []
        for dc in edit.document_changes:
            assert isinstance(dc, types.TextDocumentEdit)
            if dc.text_document.uri == doc_uri:
                out.extend(e for e in dc.edits if isinstance(e, types.TextEdit))
        return out
    assert edit.document_changes is None, "client did not declare documentChanges"
    assert edit.changes is not None
    return list(edit.changes.get(doc_uri, []))
