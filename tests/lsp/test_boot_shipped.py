"""The answer to `initialize` shipped with the package (denpex.lsp.shipped): with an empty per-user cache
the early start-up (lsp/boot.py) answers from it, and that answer is exactly pygls' own.

pygls' answers are made in-process by the real server (shipped_build.pygls_answer); the client payloads are
real ones: the capabilities pytest-lsp recorded from VS Code 1.65, Neovim 0.6-0.11 and Emacs 29, the
ones bench/bench_lsp.py and tests/robustness/wire.py send, and (test_nvim.py) a live Neovim's.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from tests.robustness.wire import RawServer

from conftest import SCENARIO, uri
from denpex.lsp import shipped, shipped_build

CLIENTS = sorted((Path(pytest_lsp.__file__).parent / "clients").glob("*.json"))
SHIPPED = "start-up: initialize answered from the answer shipped with denpex"
CACHED = "start-up: initialize answered from the start-up cache"
BENCH_CAPS = {"textDocument": {"publishDiagnostics": {"relatedInformation": True}}}
WIRE_CAPS = {"textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                              "publishDiagnostics": {"versionSupport": True},
                              "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {
                                  "valueSet": ["quickfix", "source.fixAll"]}}}}}
ROOT = Path(__file__).resolve().parents[2]


def params(caps: object) -> dict[str, Any]:
    return {"processId": os.getpid(), "rootUri": None, "capabilities": caps}


def client_caps(path: Path) -> dict[str, Any]:
    caps: dict[str, Any] = json.loads(path.read_text())["capabilities"]
    return caps


def pygls_result(caps: object) -> object:
    return shipped_build.pygls_answer(params(caps)).get("result")


def test_the_shipped_table_is_this_codes() -> None:
    table = json.loads(shipped.ANSWERS.read_text())
    assert table["stamp"] == shipped.stamp(), "stale: run python -m denpex.lsp.shipped_build --write"
    assert table == shipped_build.generate(), "stale: run python -m denpex.lsp.shipped_build --write"


@pytest.mark.parametrize("caps", [*(client_caps(p) for p in CLIENTS), BENCH_CAPS, WIRE_CAPS, {}],
                         ids=[*(p.stem for p in CLIENTS), "bench_lsp", "wire", "empty"])
def test_real_clients_get_exactly_pygls_answer(caps: dict[str, Any]) -> None:
    early = shipped.answer(params(caps))
    assert early is not None
    assert early == pygls_result(caps)


def _paths(node: object, prefix: tuple[str, ...] = (), depth: int = 2) -> list[tuple[str, ...]]:
    if not isinstance(node, dict) or depth == 0:
        return []
    out = []
    for k, v in node.items():
        out.append((*prefix, k))
        out += _paths(v, (*prefix, k), depth - 1)
    return out


def _without(caps: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(caps))
    node = copy
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return copy


def _flipped(node: object) -> object:
    if isinstance(node, bool):
        return not node
    if isinstance(node, dict):
        return {k: _flipped(v) for k, v in node.items()}
    return node


@pytest.mark.parametrize("client", ["visual_studio_code_v1.65.2", "neovim_v0.11.0"])
def test_no_other_capability_changes_pygls_answer(client: str) -> None:
    """Every section and every capability of a real payload taken away, one at a time, and every flag
    flipped at once: the shipped answer for the changed payload is still pygls' answer to it."""
    caps = client_caps(next(p for p in CLIENTS if p.stem == client))
    variants = [_without(caps, p) for p in _paths(caps)]
    variants.append(_flipped(caps))  # type: ignore[arg-type]
    for variant in variants:
        early = shipped.answer(params(variant))
        assert early is not None
        assert early == pygls_result(variant), variant


@pytest.mark.parametrize("encodings", [[], ["utf-32", "utf-8"], ["latin-1"], ["latin-1", "utf-8"], ["utf-16"]])
def test_position_encoding_is_chosen_as_pygls_does(encodings: list[str]) -> None:
    caps = {"general": {"positionEncodings": encodings}}
    assert shipped.answer(params(caps)) == pygls_result(caps)


@pytest.mark.parametrize("caps", [None, {"notebookDocument": {}}, {"textDocument": {"hover": 5}}])
def test_payloads_pygls_refuses_get_no_early_answer(caps: object) -> None:
    assert "error" in shipped_build.pygls_answer(params(caps))
    assert shipped.answer(params(caps)) is None


@pytest.mark.parametrize("caps", [{"general": {"positionEncodings": "utf-8"}},
                                  {"textDocument": {"synchronization": {"willSave": "yes"}}},
                                  {"textDocument": {"synchronization": {"willSave": None}}},
                                  {"notebookDocument": {"synchronization": []}}])
def test_odd_values_get_pygls_answer_or_none(caps: object) -> None:
    early = shipped.answer(params(caps))
    assert early is None or early == pygls_result(caps)


def test_the_stamp_follows_the_servers_code(tmp_path: Path) -> None:
    pkg = tmp_path / "lsp"
    shutil.copytree(Path(shipped.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    assert shipped.stamp(pkg) == shipped.stamp()
    (pkg / "boot.py").write_text((pkg / "boot.py").read_text() + "\n# the early part is not stamped\n")
    assert shipped.stamp(pkg) == shipped.stamp()
    save = pkg / "handlers" / "did_save.py"
    save.write_text(save.read_text().replace("include_text=False", "include_text=True"))
    assert shipped.stamp(pkg) != shipped.stamp()


# --- through the real server, with an empty per-user cache ---------------------------------------

class Client(RawServer):
    """The raw client, answering `workspace/configuration` as an editor with no settings does."""

    def _pump(self, timeout: float) -> dict[str, Any] | None:
        try:
            msg = self._messages.get(timeout=timeout)
        except queue.Empty:
            return None
        self.received.append(msg)
        if "method" in msg and "id" in msg:
            items = msg["params"]["items"] if msg["method"] == "workspace/configuration" else None
            self.send({"id": msg["id"], "result": None if items is None else [None] * len(items)})
        return msg


def _session(tmp: Path, name: str, env: dict[str, str], caps: dict[str, Any] | None = None) -> dict[str, Any]:
    folder = tmp / "ws"
    folder.mkdir(exist_ok=True)
    shutil.copy(SCENARIO, folder / "train.py")
    s = Client(tmp / f"{name}.stderr", env={**os.environ, **env}, cwd=folder)
    try:
        if caps is None:
            init = s.initialize(uri(folder))
        else:
            init = s.call("initialize", {**params(caps), "rootUri": uri(folder),
                                         "initializationOptions": {"debounceMs": 0}})
            s.notify("initialized", {})
        doc = uri(folder / "train.py")
        s.notify("textDocument/didOpen", {"textDocument": {
            "uri": doc, "languageId": "python", "version": 1, "text": (folder / "train.py").read_text()}})
        s.diagnostics(doc, 1, 90)
        # pygls has taken over once `initialized` is handled: its log line, then the early part's report
        def taken_over(m: dict[str, Any]) -> bool:
            return m.get("method") == "window/logMessage" and "diagnostics: p" in m["params"]["message"]

        if not any(taken_over(m) for m in s.received):
            s.wait(taken_over, 90)
        s.drain(0.5)
    finally:
        s.close()
    logs = [m["params"] for m in s.received if m.get("method") == "window/logMessage"]
    return {
        "init": init.get("result"),
        "answers": [m for m in s.received if m.get("id") == init["id"] and "method" not in m],
        "info": [p["message"] for p in logs if p["type"] == 4],
        "errors": [p["message"] for p in logs if p["type"] == 1],
        "publishes": [m["params"]["diagnostics"] for m in s.received
                      if m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == 1],
    }


@pytest.mark.parametrize("client", [None, "visual_studio_code_v1.65.2", "neovim_v0.7.0"])
def test_an_empty_cache_answers_early_with_pygls_answer(tmp_path: Path, client: str | None) -> None:
    caps = None if client is None else client_caps(next(p for p in CLIENTS if p.stem == client))
    cache = tmp_path / "cache"
    plain = _session(tmp_path, "plain", {"DENPEX_LSP_BOOT": "0", "DENPEX_CACHE_DIR": ""}, caps)
    cold = _session(tmp_path, "cold", {"DENPEX_CACHE_DIR": str(cache)}, caps)
    assert any(SHIPPED in m for m in cold["info"]), cold["info"]
    assert any("before the LSP library was loaded" in m for m in cold["info"]), cold["info"]
    assert cold["errors"] == [] and len(cold["answers"]) == 1
    assert cold["init"] == plain["init"]  # what pygls alone answers
    assert plain["publishes"] and all(p == plain["publishes"][0] for p in cold["publishes"])
    # pygls' answer went into the cache: the next start answers from there
    assert list((cache / "lsp-initialize").glob("*.json"))
    warm = _session(tmp_path, "warm", {"DENPEX_CACHE_DIR": str(cache)}, caps)
    assert any(CACHED in m for m in warm["info"]) and warm["errors"] == []
    assert warm["init"] == plain["init"]


def test_a_stale_table_answers_nothing_early(tmp_path: Path) -> None:
    """An install whose server code changed what pygls answers (did_save asks for the text) while the
    table stayed: the early part answers nothing, pygls' own answer goes out, and no error is logged."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "server", tree / "server", ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "rules").symlink_to(ROOT / "rules")
    save = tree / "server" / "denpex" / "lsp" / "handlers" / "did_save.py"
    save.write_text(save.read_text().replace("include_text=False", "include_text=True"))
    env = {"PYTHONPATH": str(tree / "server"), "DENPEX_CACHE_DIR": ""}
    code = "import denpex, sys; print(denpex.__file__)"
    where = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert where.startswith(str(tree)), where
    r = _session(tmp_path, "stale", env)
    assert not any("initialize answered" in m for m in r["info"]), r["info"]
    assert r["errors"] == [] and len(r["answers"]) == 1
    assert r["init"]["capabilities"]["textDocumentSync"]["save"] == {"includeText": True}
    assert [d["code"] for d in r["publishes"][0]] == ["DPX101"]
