"""A raw JSON-RPC client for `python -m denpex serve` over stdio, with its own Content-Length framing.

No LSP library on the client side: the point is to send bytes a well-behaved client never would.
A reader thread splits the server's stdout into messages; stderr goes to a file (never a pipe that
could fill up and block the server).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER = [sys.executable, "-m", "denpex", "serve"]


def frame(body: bytes | str) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def rss_kib(pid: int) -> int:
    """Resident set size of `pid` in KiB, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS line")


class RawServer:
    def __init__(self, stderr_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=env if env is not None else dict(os.environ), cwd=cwd)
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.received: list[dict[str, Any]] = []  # everything read so far, in order
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # --- transport ----------------------------------------------------------------------------

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                raise RuntimeError("server sent a message without Content-Length")
            body = out.read(length)
            self._messages.put(json.loads(body))

    def send_raw(self, data: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(frame(json.dumps({"jsonrpc": "2.0", **message})))

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, **({} if params is None else {"params": params})})

    def request(self, method: str, params: Any = None, msg_id: int | str | None = None) -> int | str:
        if msg_id is None:  # a string id no hand-written message uses
            self._next_id += 1
            msg_id = f"wire-{self._next_id}"
        self.send({"id": msg_id, "method": method, **({} if params is None else {"params": params})})
        return msg_id

    # --- receiving ----------------------------------------------------------------------------

    def _pump(self, timeout: float) -> dict[str, Any] | None:
        try:
            msg = self._messages.get(timeout=timeout)
        except queue.Empty:
            return None
        self.received.append(msg)
        if "method" in msg and "id" in msg:  # a request from the server: answer it like a plain client
            self.send({"id": msg["id"], "result": None})
        return msg

    def wait(self, pred: Any, timeout: float = 20.0) -> dict[str, Any]:
        """The next message for which pred(msg) is true (earlier ones are kept in `received`)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no matching message in {timeout}s; alive={self.alive()}")
            msg = self._pump(min(left, 0.5))
            if msg is not None and pred(msg):
                return msg
            if msg is None and not self.alive():
                raise RuntimeError(f"server exited with {self.proc.returncode}")

    def response(self, msg_id: int | str, timeout: float = 20.0) -> dict[str, Any]:
        # a response was perhaps received already
        for m in self.received:
            if m.get("id") == msg_id and "method" not in m:
                return m
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def call(self, method: str, params: Any = None, timeout: float = 20.0) -> dict[str, Any]:
        return self.response(self.request(method, params), timeout)

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = 20.0) -> list[dict[str, Any]]:
        msg = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                        and m["params"]["uri"] == uri and (version is None or m["params"].get("version") == version),
                        timeout)
        return list(msg["params"]["diagnostics"])

    def drain(self, quiet: float = 0.2) -> None:
        while self._pump(quiet) is not None:
            pass

    # --- lifecycle ----------------------------------------------------------------------------

    def initialize(self, root_uri: str | None, options: dict[str, Any] | None = None) -> dict[str, Any]:
        r = self.call("initialize", {
            "processId": os.getpid(), "rootUri": root_uri,
            "capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                                              "publishDiagnostics": {"versionSupport": True},
                                              "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {
                                                  "valueSet": ["quickfix", "source.fixAll"]}}}}},
            "initializationOptions": options if options is not None else {"debounceMs": 0},
        })
        self.notify("initialized", {})
        return r

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kib(self) -> int:
        return rss_kib(self.proc.pid)

    def close(self) -> int | None:
        """Polite shutdown/exit; kill if it does not go. Returns the exit code."""
        try:
            if self.alive():
                self.call("shutdown", None, timeout=10)
                self.notify("exit")
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
                self.proc.wait(timeout=10)
        except Exception:
            pass
        finally:
            if self.alive():
                self.proc.kill()
                self.proc.wait(timeout=10)
            self._stderr.close()
        return self.proc.returncode

    def stderr_text(self, path: Path) -> str:
        return path.read_text(errors="replace")
