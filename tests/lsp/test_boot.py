"""The early start-up (lsp/boot.py): `initialize` answered from the start-up cache and the first
diagnostics published before pygls is imported, then the whole byte stream replayed to pygls.

Raw JSON-RPC over the server's stdio (tests/robustness/wire.py), so the test sees every message the
server sends, in order, duplicates included.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.robustness.wire import RawServer

from conftest import SCENARIO, uri
from denpex.lsp.boot import Replay

EARLY = "start-up: initialize answered from the start-up cache"
SHIPPED = "start-up: initialize answered from the answer shipped with denpex"  # tests/lsp/test_boot_shipped.py


def session(tmp: Path, cache: Path, name: str, **env: str) -> dict[str, Any]:
    folder = tmp / "ws"
    folder.mkdir(exist_ok=True)
    shutil.copy(SCENARIO, folder / "train.py")
    s = RawServer(tmp / f"{name}.stderr", env={**os.environ, "XDG_CACHE_HOME": str(cache), **env}, cwd=folder)
    try:
        init = s.initialize(uri(folder))
        doc = uri(folder / "train.py")
        s.notify("textDocument/didOpen", {"textDocument": {
            "uri": doc, "languageId": "python", "version": 1, "text": (folder / "train.py").read_text()}})
        hover = s.call("textDocument/hover", {"textDocument": {"uri": doc}, "position": {"line": 8, "character": 30}})
        s.drain(0.5)
    finally:
        s.close()
    publishes = [m["params"]["diagnostics"] for m in s.received
                 if m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == 1]
    logs = [m["params"] for m in s.received if m.get("method") == "window/logMessage"]
    answers = [m for m in s.received if m.get("id") == init["id"] and "method" not in m]
    return {"init": init["result"], "publishes": publishes, "logs": logs, "answers": answers, "hover": hover}


def messages(result: dict[str, Any], kind: int) -> list[str]:
    return [p["message"] for p in result["logs"] if p["type"] == kind]


def test_second_start_answers_early_with_what_pygls_answered(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cold = session(tmp_path, cache, "cold")
    assert not any(EARLY in m for m in messages(cold, 4))  # nothing cached yet: the package's answer
    assert any(SHIPPED in m for m in messages(cold, 4)), cold["logs"]
    assert list((cache / "denpex" / "lsp-initialize").glob("*.json"))
    warm = session(tmp_path, cache, "warm")
    assert any(EARLY in m for m in messages(warm, 4)), warm["logs"]
    for r in (cold, warm):
        assert any("published in" in m and "before the LSP library was loaded" in m for m in messages(r, 4))
        assert messages(r, 1) == [], messages(r, 1)  # no error: the early answer matched pygls' own
        assert len(r["answers"]) == 1  # initialize answered once
        assert r["hover"]["result"] is not None
    assert warm["init"] == cold["init"]
    # the early publish and pygls' publishes of version 1 (after didOpen, after indexing) are all the
    # same, and the same as without the early part (test_early_start_can_be_switched_off)
    assert all(p == cold["publishes"][0] for p in warm["publishes"] + cold["publishes"])
    assert [d["code"] for d in warm["publishes"][0]] == ["DPX101"]


def test_early_start_can_be_switched_off(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    session(tmp_path, cache, "fill")
    off = session(tmp_path, cache, "off", DENPEX_LSP_BOOT="0")
    assert not any(EARLY in m for m in messages(off, 4))
    assert [[d["code"] for d in p] for p in off["publishes"]] in ([["DPX101"]], [["DPX101"]] * 2)


def test_caching_turned_off_answers_from_the_package_and_stores_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    session(tmp_path, cache, "fill")
    before = sorted((cache / "denpex" / "lsp-initialize").glob("*.json"))
    off = session(tmp_path, cache, "off", DENPEX_CACHE_DIR="")
    assert not any(EARLY in m for m in messages(off, 4))
    assert any(SHIPPED in m for m in messages(off, 4)), off["logs"]
    assert len(off["answers"]) == 1 and messages(off, 1) == []
    assert [d["code"] for d in off["publishes"][0]] == ["DPX101"]
    assert sorted((cache / "denpex" / "lsp-initialize").glob("*.json")) == before


def test_a_stale_cache_is_reported_and_refreshed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    session(tmp_path, cache, "fill")
    (entry,) = (cache / "denpex" / "lsp-initialize").glob("*.json")
    stale = json.loads(entry.read_text())
    stale["capabilities"]["hoverProvider"] = False
    entry.write_text(json.dumps(stale))
    r = session(tmp_path, cache, "stale")
    assert any("answered initialize differently" in m for m in messages(r, 1)), r["logs"]
    assert json.loads(entry.read_text())["capabilities"]["hoverProvider"] is True
    again = session(tmp_path, cache, "again")
    assert messages(again, 1) == [] and any(EARLY in m for m in messages(again, 4))


def test_replay_reads_the_prefix_then_the_stream() -> None:
    r = Replay(b"Content-Length: 2\r\n\r\n{}par", io.BytesIO(b"tial line\nrest"))
    assert r.readline(1 << 16) == b"Content-Length: 2\r\n"
    assert r.readline(1 << 16) == b"\r\n"
    assert r.read(2) == b"{}"
    assert r.readline(1 << 16) == b"partial line\n"  # a line split between the prefix and the stream
    assert r.read(10) == b"rest"
    r = Replay(b"abcdef", io.BytesIO(b"gh\n"))
    assert r.readline(4) == b"abcd"  # the limit holds across the seam
    assert r.readline(4) == b"efgh"
    assert r.readline(4) == b"\n"


def test_the_early_part_imports_neither_pygls_server_nor_lsprotocol() -> None:
    import subprocess
    import sys

    code = ("import sys; import denpex.lsp.boot, denpex.lsp.analysis, denpex.lsp.findings_json, "
            "denpex.lsp.settings, denpex.lsp.capabilities, denpex.lsp.kinds, denpex.rulebook; "
            "print(sorted(m for m in sys.modules if m.startswith(('lsprotocol', 'pygls.lsp', 'pygls.protocol'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout
