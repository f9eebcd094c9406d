"""The language server survives a bounded stream of hostile LSP traffic and keeps answering.

`python -m denpex serve` runs as a plain subprocess; `wire.RawServer` frames the bytes itself, so the
stream can hold what no LSP library would send: garbage, bad JSON, lying Content-Length headers,
unknown methods, wrongly typed params, out-of-order document traffic, huge documents, deep nesting,
cancellations and out-of-range positions. After every hostile chunk a probe request must be answered
(a chunk that lies about its length may swallow a probe or two: the probe is re-sent, a bounded number
of times); at the end the server must still publish the right diagnostics and hover for a real file.
Only stdio is used.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls import uris

from tests.conftest import REPO
from tests.robustness.wire import RawServer, frame

SCENARIO = REPO / "tests" / "lsp" / "workspace" / "gpu" / "scenarios" / "01_item_in_capture.py"
SEED = 20240611
RANDOM_MUTANTS = 400
TIME_BOUND_S = 150.0  # the whole stream, huge documents included


def file_uri(p: Path) -> str:
    u: str | None = uris.from_fs_path(str(p))
    assert u is not None
    return u


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(SCENARIO, ws / "scenario.py")
    return ws


def msg(body: dict[str, Any]) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", **body}))


def pos(line: Any, character: Any) -> dict[str, Any]:
    return {"line": line, "character": character}


def rng(a: tuple[Any, Any], b: tuple[Any, Any]) -> dict[str, Any]:
    return {"start": pos(*a), "end": pos(*b)}


def hostile_chunks(ws: Path) -> Iterator[tuple[str, bytes]]:
    """Named hand-written hostile inputs (each one complete bytes to write to the server's stdin)."""
    doc = file_uri(ws / "edited.py")
    never = file_uri(ws / "never_opened.py")
    text = SCENARIO.read_text()
    td = {"uri": doc}

    def change(version: Any, changes: Any, uri: str = doc) -> bytes:
        return msg({"method": "textDocument/didChange",
                    "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}})

    def hover(params: Any, msg_id: Any = "h") -> bytes:
        return msg({"id": msg_id, "method": "textDocument/hover", "params": params})

    # --- framing ---------------------------------------------------------------------------------
    yield "garbage bytes", bytes(range(256)) * 4 + b"\r\n"
    yield "garbage without newline", b"\xff\xfe" * 3000
    yield "header only", b"Content-Length: 10\r\n"
    yield "missing blank line", b"Content-Length: 2\r\n{}"
    yield "zero length", b"Content-Length: 0\r\n\r\n"
    yield "negative length", b"Content-Length: -5\r\n\r\n{}\r\n"
    yield "non-numeric length", b"Content-Length: ten\r\n\r\n{}\r\n"
    yield "length too short", b"Content-Length: 5\r\n\r\n" + json.dumps({"jsonrpc": "2.0", "id": 1,
                                                                            "method": "shutdown"}).encode()
    body = json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode()
    yield "length too long", b"Content-Length: %d\r\n\r\n" % (len(body) + 40) + body + b"x" * 40
    yield "absurd length", b"Content-Length: 1000000000000\r\n\r\n{}\r\n"
    yield "over the message cap", b"Content-Length: 300000000\r\n\r\n{}\r\n"
    yield "two length headers", b"Content-Length: 2\r\nContent-Length: 400\r\n\r\n{}"
    yield "extra headers", (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nX-Odd: \x00\r\n"
                            + msg({"method": "$/noop"}))
    yield "lf-only header", b"Content-Length: 2\n\n{}\n"
    yield "huge header line", b"X-Pad: " + b"a" * 300_000 + b"\r\n\r\n"
    # --- bad JSON ----------------------------------------------------------------------------------
    for name, raw in [("truncated", b'{"jsonrpc": "2.0", "id": 3, "method": "textDoc'),
                      ("not utf-8", b'{"jsonrpc": "2.0", "method": "\xff\xfe"}'),
                      ("trailing data", b'{"jsonrpc": "2.0", "method": "$/x"} {}'),
                      ("nan", b'{"jsonrpc": "2.0", "id": NaN, "method": "x"}'),
                      ("number", b"42"), ("null", b"null"), ("string", b'"hello"'), ("array", b"[]"),
                      ("batch", b'[' + json.dumps({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}).encode()
                       + b']'),
                      ("deep array", b"[" * 100_000 + b"]" * 100_000),
                      ("deep object", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
                      ("huge number", b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "x"}')]:
        yield f"bad json: {name}", frame(raw)
    deep_params: Any = 1
    for _ in range(300):
        deep_params = {"x": [deep_params]}
    yield "deep but valid params", msg({"id": "deep", "method": "textDocument/hover", "params": deep_params})
    yield "deep settings", msg({"method": "workspace/didChangeConfiguration",
                                "params": {"settings": {"denpex": deep_params}}})
    # --- JSON-RPC shapes -------------------------------------------------------------------------------
    yield "no jsonrpc field", frame(json.dumps({"id": 5, "method": "textDocument/hover"}))
    yield "jsonrpc 1.0", frame(json.dumps({"jsonrpc": "1.0", "id": 6, "method": "shutdown"}))
    yield "response to nothing", msg({"id": 999, "result": {"x": 1}})
    yield "error to nothing", msg({"id": 998, "error": {"code": 1, "message": "m"}})
    yield "id object", msg({"id": {"a": 1}, "method": "textDocument/hover", "params": {}})
    yield "method not a string", msg({"id": 7, "method": 12, "params": {}})
    yield "unknown request", msg({"id": 8, "method": "denpex/doesNotExist", "params": {"a": 1}})
    yield "unknown notification", msg({"method": "denpex/doesNotExist"})
    yield "unknown $ notification", msg({"method": "$/somethingElse", "params": [1, 2]})
    yield "initialize again", msg({"id": 9, "method": "initialize", "params": {"capabilities": {}}})
    yield "cancel unknown", msg({"method": "$/cancelRequest", "params": {"id": 12345}})
    yield "cancel bad params", msg({"method": "$/cancelRequest", "params": "now"})
    # --- wrong param types -----------------------------------------------------------------------------
    yield "hover params string", hover("params")
    yield "hover params list", hover([1, 2, 3])
    yield "hover no params", msg({"id": "h0", "method": "textDocument/hover"})
    yield "hover line string", hover({"textDocument": td, "position": pos("a", 0)})
    yield "hover negative", hover({"textDocument": td, "position": pos(-1, -1)})
    yield "hover float", hover({"textDocument": td, "position": pos(1.5, 1e300)})
    yield "hover uri int", hover({"textDocument": {"uri": 3}, "position": pos(0, 0)})
    yield "didOpen text int", msg({"method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": doc, "languageId": "python", "version": 1, "text": 5}}})
    yield "didChange changes string", change(2, "x = 1")
    yield "codeAction garbage", msg({"id": "ca", "method": "textDocument/codeAction",
                                     "params": {"textDocument": td, "range": "all", "context": None}})
    yield "codeAction/resolve garbage", msg({"id": "car", "method": "codeAction/resolve",
                                             "params": {"title": 1, "data": [None]}})
    yield "executeCommand bad args", msg({"id": "ec", "method": "workspace/executeCommand",
                                          "params": {"command": "denpex.diagnose", "arguments": [{"x": []}]}})
    yield "executeCommand no args", msg({"id": "ec2", "method": "workspace/executeCommand",
                                         "params": {"command": "denpex.diagnose"}})
    yield "didChangeWatchedFiles junk", msg({"method": "workspace/didChangeWatchedFiles", "params": {
        "changes": [{"uri": "file:///nonexistent/dir/pyproject.toml", "type": 2},
                    {"uri": "not a uri", "type": 9}]}})
    yield "folders junk", msg({"method": "workspace/didChangeWorkspaceFolders", "params": {
        "event": {"added": [{"uri": "file:///nonexistent-folder", "name": "x"}], "removed": [{"uri": 1}]}}})
    yield "settings junk", msg({"method": "workspace/didChangeConfiguration", "params": {"settings": {
        "denpex": {"debounceMs": "soon", "maxFileBytes": -1, "severity": [1], "rules": {"x": None}}}}})
    yield "settings restored", msg({"method": "workspace/didChangeConfiguration",
                                    "params": {"settings": {"denpex": {"debounceMs": 0}}}})
    # --- document traffic out of order ---------------------------------------------------------------
    yield "didChange before didOpen", change(2, [{"text": "x = 1\n"}], uri=never)
    yield "didSave before didOpen", msg({"method": "textDocument/didSave", "params": {"textDocument": {"uri": never}}})
    yield "didClose before didOpen", msg({"method": "textDocument/didClose",
                                          "params": {"textDocument": {"uri": never}}})
    yield "didOpen", msg({"method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": doc, "languageId": "python", "version": 10, "text": text}}})
    yield "didOpen again", msg({"method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": doc, "languageId": "python", "version": 3, "text": "y = 2\n" + text}}})
    yield "version backwards", change(1, [{"text": text}])
    yield "version null", change(None, [{"text": text}])
    yield "range past the end", change(11, [{"range": rng((10_000, 0), (20_000, 5)), "text": "z = 3\n"}])
    yield "range reversed", change(12, [{"range": rng((5, 4), (1, 0)), "text": "q"}])
    yield "range mid-surrogate", change(13, [{"range": rng((0, 1), (0, 1)), "text": "\U0001F600"},
                                             {"range": rng((0, 2), (0, 3)), "text": "é"}])
    yield "range huge char", change(14, [{"range": rng((2, 2**31 - 1), (2, 2**31 - 1)), "text": "#"}])
    yield "range negative", change(15, [{"range": rng((-1, -1), (0, 0)), "text": "#"}])
    yield "lone surrogate text", change(16, [{"text": "s = '\ud800'\n" + text}])
    yield "nul and control text", change(17, [{"text": "a = 1\x00\x01\x1b[31m\u2028\u2029\ufeff\n" + text}])
    yield "mixed line ends", change(18, [{"text": text.replace("\n", "\r\n", 5).replace("\n", "\r", 3)}])
    yield "odd unicode", change(19, [{"text": "def \u00e9t\u00e9(\u0394):\n    return '\U0001F680' * \u0394\n" + text}])
    yield "many tiny changes", change(20, [{"range": rng((0, 0), (0, 0)), "text": "#"} for _ in range(2000)])
    yield "hover past the end", hover({"textDocument": td, "position": pos(10**9, 10**9)})
    yield "hover max uint", hover({"textDocument": td, "position": pos(2**31 - 1, 2**31 - 1)})
    yield "codeAction reversed", msg({"id": "ca2", "method": "textDocument/codeAction", "params": {
        "textDocument": td, "range": rng((40, 0), (2, 0)), "context": {"diagnostics": [
            {"range": rng((-3, 0), (10**6, 0)), "message": "x", "data": {"rule": 7, "version": "no"}}]}}})
    yield "cancelled mid-flight", (msg({"id": "cancel-me", "method": "textDocument/hover",
                                         "params": {"textDocument": td, "position": pos(8, 20)}})
                                   + msg({"method": "$/cancelRequest", "params": {"id": "cancel-me"}}))
    yield "odd uris", b"".join(msg({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": u, "languageId": lang, "version": 1, "text": "x = 1\n"}}}) for u, lang in [
        ("untitled:Untitled-1", "python"), ("weird://host/a.py", "python"), ("file:///%ZZ.py", "python"),
        ("file://remote-host/share/a.py", "python"), ("file:///tmp/a\x00b.py", "python"), ("", "python"),
        ("file:///" + "d/" * 3000 + "a.py", "python"), (file_uri(ws / "x.log"), "log"),
        (file_uri(ws / "pyproject.toml"), "toml")])
    # --- oversized ----------------------------------------------------------------------------------
    big = ("x = 1  # " + "pad " * 20 + "\n") * (5_000_000 // 90)
    yield "5 MB document", msg({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": file_uri(ws / "big.py"), "languageId": "python", "version": 1, "text": big}}})
    yield "5 MB one line", change(30, [{"range": rng((3, 0), (3, 0)), "text": "y = '" + "a" * 5_000_000 + "'\n"}])
    # under maxFileBytes (4 MB), so it is analysed. (Not the scenario repeated: thousands of capture
    # regions in one module make the analyser quadratic; that is reported, not exercised here.)
    filler = "".join(f"def f{i}(a, b):\n    c = a + b * {i}\n    return c.sum()\n\n" for i in range(58_000))
    yield "3.5 MB analysable document", msg({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": file_uri(ws / "big2.py"), "languageId": "python", "version": 1, "text": text + filler}}})
    yield "5 MB log document", msg({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": file_uri(ws / "big.log"), "languageId": "log", "version": 1,
        "text": "RuntimeError: CUDA error: operation not permitted when stream is capturing\n" * 65_000}}})
    yield "close big", b"".join(msg({"method": "textDocument/didClose", "params": {"textDocument": {
        "uri": file_uri(ws / n)}}}) for n in ("big.py", "big2.py", "big.log"))


def mutants(seed: int, count: int, ws: Path) -> Iterator[tuple[str, bytes]]:
    """Random structural and byte-level mutations of valid messages (seeded, reproducible)."""
    r = random.Random(seed)
    doc = file_uri(ws / "mutant.py")
    text = SCENARIO.read_text()
    valid: list[dict[str, Any]] = [
        {"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": doc, "languageId": "python", "version": 1, "text": text}}},
        {"method": "textDocument/didChange", "params": {"textDocument": {"uri": doc, "version": 2},
                                                        "contentChanges": [{"range": rng((8, 4), (8, 9)),
                                                                            "text": "value"}]}},
        {"id": 1, "method": "textDocument/hover", "params": {"textDocument": {"uri": doc}, "position": pos(8, 20)}},
        {"id": 2, "method": "textDocument/codeAction", "params": {
            "textDocument": {"uri": doc}, "range": rng((8, 0), (8, 40)), "context": {"diagnostics": []}}},
        {"id": 3, "method": "workspace/executeCommand", "params": {
            "command": "denpex.diagnose", "arguments": ["RuntimeError: operation not permitted when stream is capturing"]}},
        {"method": "textDocument/didSave", "params": {"textDocument": {"uri": doc}}},
        {"method": "textDocument/didClose", "params": {"textDocument": {"uri": doc}}},
        {"method": "workspace/didChangeConfiguration", "params": {"settings": {"denpex": {"debounceMs": 0}}}},
    ]
    odd_values: list[Any] = [None, True, -1, 2**31, 2**64, 1.5, "", "x" * 1000, "\ud800", [], {}, [None], {"a": {}},
                             "file:///", "\x00", -(2**63)]

    def mutate_json(node: Any, depth: int = 0) -> Any:
        if isinstance(node, dict) and node:
            node = dict(node)
            key = r.choice(list(node))
            action = r.random()
            if action < 0.15:
                del node[key]
            elif action < 0.6 or depth > 6:
                node[key] = r.choice(odd_values)
            else:
                node[key] = mutate_json(node[key], depth + 1)
            return node
        if isinstance(node, list) and node:
            node = list(node)
            i = r.randrange(len(node))
            node[i] = mutate_json(node[i], depth + 1) if r.random() < 0.5 else r.choice(odd_values)
            return node
        return r.choice(odd_values)

    for i in range(count):
        base = {"jsonrpc": "2.0", **r.choice(valid)}
        kind = r.random()
        if kind < 0.6:
            m = base
            for _ in range(r.randint(1, 3)):
                m = mutate_json(m)
            yield f"mutant {i}: json", frame(json.dumps(m))
        else:
            data = bytearray(frame(json.dumps(base)))
            for _ in range(r.randint(1, 8)):
                op = r.random()
                j = r.randrange(len(data))
                if op < 0.4:
                    data[j] = r.randrange(256)
                elif op < 0.7:
                    del data[j:j + r.randint(1, 20)]
                else:
                    data[j:j] = bytes(r.randrange(256) for _ in range(r.randint(1, 20)))
            yield f"mutant {i}: bytes", bytes(data)


class Prober:
    """After each chunk: make sure a request is answered again.

    A chunk whose Content-Length promises more bytes than it holds makes the server read the next
    message(s) as its body: that is the protocol (the framing is the only sync), not a fault. So an
    unanswered probe is followed by padding (long lines of spaces: harmless between messages, and
    they complete any pending body read) in growing amounts, then a new probe.
    """

    LINE = b" " * 65_000 + b"\r\n"
    ATTEMPTS = ((0, 1.0), (1, 2.0), (16, 2.0), (260, 10.0), (0, 60.0))  # (padding lines, wait s)

    def __init__(self, server: RawServer, ws: Path) -> None:
        self.s = server
        self.n = 0
        self.padded = 0
        self.params = {"textDocument": {"uri": file_uri(ws / "probe-not-open.py")}, "position": pos(0, 0)}

    def probe(self, after: str) -> None:
        for pad, wait in self.ATTEMPTS:
            if pad:
                self.padded += 1
            self.s.send_raw(self.LINE * pad + b"\r\n\r\n")
            self.n += 1
            msg_id = f"probe-{self.n}"
            self.s.request("textDocument/hover", self.params, msg_id=msg_id)
            try:
                resp = self.s.response(msg_id, timeout=wait)
            except TimeoutError:
                continue
            assert resp.get("result") is None and "error" not in resp, (after, resp)
            return
        raise AssertionError(f"no answer to a probe after {after!r}; alive={self.s.alive()}")


def test_survives_hostile_stream_and_keeps_answering(workspace: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "server.err"
    s = RawServer(stderr, cwd=workspace)
    t0 = time.monotonic()
    try:
        init = s.initialize(file_uri(workspace))
        assert init["result"]["capabilities"]["hoverProvider"] is True
        prober = Prober(s, workspace)
        prober.probe("initialize")
        tried = 0
        slow: list[tuple[float, str]] = []
        for name, chunk in [*hostile_chunks(workspace), *mutants(SEED, RANDOM_MUTANTS, workspace)]:
            t1 = time.monotonic()
            s.send_raw(chunk)
            tried += 1
            prober.probe(name)
            slow.append((time.monotonic() - t1, name))
            assert s.alive(), f"server died after {name!r}: {s.stderr_text(stderr)[-3000:]}"
            assert time.monotonic() - t0 < TIME_BOUND_S, ("too slow", sorted(slow, reverse=True)[:5])

        # the cancelled request got an answer (a result or RequestCancelled), as LSP requires
        cancelled = [m for m in s.received if m.get("id") == "cancel-me"]
        assert len(cancelled) == 1, cancelled
        assert "result" in cancelled[0] or cancelled[0]["error"]["code"] == -32800
        # unknown requests are refused with MethodNotFound, not dropped
        unknown = [m for m in s.received if m.get("id") == 8]
        assert unknown and unknown[0]["error"]["code"] == -32601, unknown

        # a second initialize is refused (it would reset the workspace and the client's capabilities)
        again = [m for m in s.received if m.get("id") == 9]
        assert again and again[0]["error"]["code"] == -32600, again

        # still serving correctly: a fresh document gets its diagnostic, its hover and its quick fix
        s.drain()
        good = file_uri(workspace / "scenario.py")
        s.notify("textDocument/didOpen", {"textDocument": {"uri": good, "languageId": "python", "version": 1,
                                                           "text": SCENARIO.read_text()}})
        diags = s.diagnostics(good, version=1)
        assert [d["code"] for d in diags] == ["DPX101"], diags
        start = diags[0]["range"]["start"]
        h = s.call("textDocument/hover", {"textDocument": {"uri": good},
                                          "position": pos(start["line"], start["character"] + 3)})
        md = h["result"]["contents"]["value"]
        assert "DPX101" in md and "capture-item-sync" in md, md
        ca = s.call("textDocument/codeAction", {"textDocument": {"uri": good}, "range": diags[0]["range"],
                                                "context": {"diagnostics": diags}})
        assert ca["result"], ca
        assert not [m for m in s.received if m.get("method") == "window/showMessage"]
        print(f"\nhostile chunks tried: {tried}; probes: {prober.n} ({prober.padded} after padding "
              f"a swallowing length); elapsed {time.monotonic() - t0:.1f}s; slowest: "
              + ", ".join(f"{n} {t:.1f}s" for t, n in sorted(slow, reverse=True)[:4]))
        errors = {m["params"]["message"].splitlines()[0][:80] for m in s.received
                  if m.get("method") == "window/logMessage" and m["params"]["type"] == 1}
        print(f"distinct faults logged (window/logMessage, answered or dropped, never fatal): {len(errors)}")
        assert s.alive()
    finally:
        code = s.close()
    assert code == 0, s.stderr_text(stderr)[-3000:]
