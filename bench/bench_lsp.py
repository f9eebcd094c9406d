"""Language-server latency as a real client sees it: a subprocess speaking JSON-RPC over stdio.

    python bench/bench_lsp.py [--edits 200] [--starts 5] [--no-nvim] [--check]

Measures
  * editor start -> first textDocument/publishDiagnostics for the opened file in headless Neovim
    (bench/nvim_start.lua; target median <= 400 ms), when `nvim` is installed;
  * the same from this script's own minimal client (process spawn -> first publish);
  * didChange -> publishDiagnostics of that version, p50/p95, on a 6,400-line file with a capture
    region (target p95 <= 50 ms).

The named peer is `ruff server` (the venv's `ruff`, else one on PATH), timed in the same run on the
same file by the same clients; it is skipped when not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

LINES = 6_400
START_TARGET_MS = 400
KEYSTROKE_P95_TARGET_MS = 50
HERE = Path(__file__).resolve().parent


def make_source(lines: int = LINES) -> str:
    """A module of helper functions, a step function and a capture region calling it."""
    out = ["import torch", "", "x = torch.randn(4096, device='cuda')", ""]
    i = 0
    while len(out) < lines - 30:
        out += [
            f"def helper_{i}(t, scale={i % 7 + 1}):",
            f"    '''Helper number {i}.'''",
            "    y = t * scale",
            "    y = y + torch.ones_like(y)",
            "    z = torch.relu(y) - 0.5",
            "    if scale > 3:",
            "        z = z * 2",
            "    return z.sum(dim=0, keepdim=True)",
            "",
            "",
        ]
        i += 1
    out += [
        "def step():",
        "    y = helper_0(x)",
        "    y = helper_1(y)",
        "    scale = y.abs().max().item()  # host sync while capturing",
        "    return y / scale",
        "",
        "",
        "s = torch.cuda.Stream()",
        "s.wait_stream(torch.cuda.current_stream())",
        "with torch.cuda.stream(s):",
        "    for _ in range(3):",
        "        step()",
        "torch.cuda.current_stream().wait_stream(s)",
        "",
        "g = torch.cuda.CUDAGraph()",
        "with torch.cuda.graph(g):",
        "    out = step()",
        "g.replay()",
    ]
    while len(out) < lines:
        out.append("# padding")
    return "\n".join(out) + "\n"


# the server's requests the client answers (with null, or no settings); workDoneProgress/create: a server that
# reports progress waits for it
CLIENT_REQUESTS = ("workspace/configuration", "client/registerCapability", "window/workDoneProgress/create")


class Client:
    def __init__(self, cmd: list[str], cwd: str) -> None:
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=cwd)
        self.messages: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self._id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        stream = self.proc.stdout
        while True:
            headers: dict[str, str] = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode().partition(":")
                headers[k.lower()] = v.strip()
            body = stream.read(int(headers["content-length"]))
            self.messages.put((time.perf_counter(), json.loads(body)))

    def send(self, method: str, params: Any, request: bool = False) -> int | None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        rid = None
        if request:
            self._id += 1
            rid = msg["id"] = self._id
        data = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()
        return rid

    def wait(self, pred: Any, timeout: float = 30.0) -> tuple[float, dict[str, Any]]:
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError("no matching message")
            t, msg = self.messages.get(timeout=left)
            if msg.get("method") in CLIENT_REQUESTS and "id" in msg:
                self._reply(msg)
            if pred(msg):
                return t, msg

    def _reply(self, msg: dict[str, Any]) -> None:
        result: Any = None
        if msg["method"] == "workspace/configuration":
            result = [None] * len(msg["params"]["items"])
        data = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def close(self) -> None:
        try:
            rid = self.send("shutdown", None, request=True)
            self.wait(lambda m: m.get("id") == rid, 10)
            self.send("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()


def diagnostics_for(uri: str, version: int | None = None) -> Any:
    def pred(m: dict[str, Any]) -> bool:
        if m.get("method") != "textDocument/publishDiagnostics":
            return False
        p = m["params"]
        return bool(p["uri"] == uri and (version is None or p.get("version") == version))
    return pred


def session(cmd: list[str], root: Path, path: Path, text: str, peer: bool = False) -> tuple[Client, float, str]:
    c = Client(cmd, str(root))
    uri = path.as_uri()
    rid = c.send("initialize", {
        "processId": os.getpid(), "rootUri": root.as_uri(),
        "workspaceFolders": [{"uri": root.as_uri(), "name": "bench"}],
        "capabilities": {"textDocument": {"publishDiagnostics": {"relatedInformation": True}}},
    }, request=True)
    c.wait(lambda m: m.get("id") == rid)
    c.send("initialized", {})
    c.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    t, msg = c.wait(diagnostics_for(uri, None if peer else 1))
    assert peer or msg["params"]["diagnostics"], "expected the .item() finding"
    return c, (t - c.t_spawn) * 1000, uri


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def ruff_command() -> list[str] | None:
    venv_ruff = Path(sys.executable).parent / "ruff"
    exe = str(venv_ruff) if venv_ruff.exists() else shutil.which("ruff")
    return [exe, "server"] if exe else None


def nvim_starts(nvim: str, cmd: list[str], root: Path, path: Path, n: int, peer: bool = False) -> list[float]:
    """Editor start -> first diagnostics in headless Neovim, `n` times."""
    out: list[float] = []
    for i in range(n):
        result = root / f"nvim_{i}.json"
        env = {**os.environ, "BENCH_FILE": str(path), "BENCH_ROOT": str(root), "BENCH_OUT": str(result),
               "BENCH_CMD": json.dumps(cmd), "BENCH_ANY": "1" if peer else "0",
               "XDG_STATE_HOME": str(root / "state"), "XDG_DATA_HOME": str(root / "data"),
               "XDG_CONFIG_HOME": str(root / "config")}
        subprocess.run([nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c",
                        f"luafile {HERE / 'nvim_start.lua'}"], env=env, cwd=root, timeout=60,
                       stdin=subprocess.DEVNULL, capture_output=True, check=False)
        data = json.loads(result.read_text()) if result.exists() else {"error": "no result"}
        if "ms" not in data:
            raise RuntimeError(f"nvim run failed: {data}")
        out.append(float(data["ms"]))
    return out


def verdict(ok: bool) -> str:
    return "OK" if ok else "MISSED"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--no-nvim", action="store_true", help="skip the Neovim start-up measurement")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "denpex", "serve"]
    peer = ruff_command()
    nvim = None if args.no_nvim else shutil.which("nvim")
    text = make_source()
    lines = text.splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "train.py"
        path.write_text(text)
        nvim_ms = nvim_starts(nvim, cmd, root, path, args.starts) if nvim else []
        nvim_peer = nvim_starts(nvim, peer, root, path, args.starts, peer=True) if nvim and peer else []
        starts: list[float] = []
        for _ in range(args.starts):
            c, ms, _uri = session(cmd, root, path, text)
            starts.append(ms)
            c.close()
        peer_starts: list[float] = []
        for _ in range(args.starts if peer else 0):
            assert peer is not None
            c, ms, _uri = session(peer, root, path, text, peer=True)
            peer_starts.append(ms)
            c.close()
        c, _ms, uri = session(cmd, root, path, text)
        time.sleep(0.3)  # let background indexing finish
        edit_line = next(i for i, s in enumerate(lines) if s.startswith("    y = t * scale"))
        latencies: list[float] = []
        findings: set[int] = set()
        for k in range(args.edits):
            version = k + 2
            col = len(lines[edit_line])
            change = ({"range": {"start": {"line": edit_line, "character": col}, "end": {"line": edit_line, "character": col}},
                       "text": " "} if k % 2 == 0 else
                      {"range": {"start": {"line": edit_line, "character": col}, "end": {"line": edit_line, "character": col + 1}},
                       "text": ""})
            t0 = time.perf_counter()
            c.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
            t1, msg = c.wait(diagnostics_for(uri, version))
            latencies.append((t1 - t0) * 1000)
            findings.add(len(msg["params"]["diagnostics"]))
        c.close()
    p50, p95 = pct(latencies, 0.5), pct(latencies, 0.95)
    start_med, start_max = statistics.median(starts), max(starts)
    peer_name = "ruff server" if peer else None
    print(f"file: {len(lines)} lines, capture region calling into it; findings per publish: {sorted(findings)}")
    ok = p95 <= KEYSTROKE_P95_TARGET_MS
    if nvim_ms:
        med = statistics.median(nvim_ms)
        ok = ok and med <= START_TARGET_MS
        line = (f"Neovim start -> first diagnostics: median {med:.0f} ms, max {max(nvim_ms):.0f} ms over "
                f"{len(nvim_ms)} starts (target median <= {START_TARGET_MS} ms): {verdict(med <= START_TARGET_MS)}")
        if nvim_peer:
            pm = statistics.median(nvim_peer)
            line += f"; peer {peer_name}: median {pm:.0f} ms ({med / pm:.1f}x)"
        print(line)
    else:
        print("Neovim start -> first diagnostics: not measured (nvim not installed or --no-nvim)")
    line = (f"spawn -> first diagnostics (bench client): median {start_med:.0f} ms, max {start_max:.0f} ms over "
            f"{len(starts)} starts")
    if peer_starts:
        pm = statistics.median(peer_starts)
        line += f"; peer {peer_name}: median {pm:.0f} ms ({start_med / pm:.1f}x)"
    print(line if peer_starts else line + "; peer ruff server: not installed")
    print(f"didChange -> publishDiagnostics over {len(latencies)} edits: p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
          f"max {max(latencies):.1f} ms (target p95 <= {KEYSTROKE_P95_TARGET_MS} ms): "
          f"{verdict(p95 <= KEYSTROKE_P95_TARGET_MS)}")
    if args.check and not ok:
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
