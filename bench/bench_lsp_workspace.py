"""The language server inside a real project: a stdio JSON-RPC client (bench_lsp.Client) driving
`denpex serve` with a real tree as the workspace folder, and the peer `ruff server` in the same run.

    python bench/bench_lsp_workspace.py [--workspace /tmp/denpex-eco/Megatron-LM ...] [--edits 40]
                                        [--starts 3] [--out bench/results_lsp_workspace.json]
                                        [--starts-only --out bench/results_lsp_start.json]

For each workspace (the tree read-only, plus a second workspace folder in a temp dir holding the new files):
  * keystroke -> publishDiagnostics of that version, p50/p95/max, for three files:
    (a) a new file no one imports, holding a capture that calls a function with `.item()`;
    (b) a file deep in the project's import graph;
    (c) a file that a capture in another file reaches (the project's own when known, else a new pair);
    the client types and deletes one space at the end of a line inside a function, after the background
    index is complete;
  * spawn -> first diagnostics of (a) with an empty cache (DENPEX_CACHE_DIR a fresh dir) and warm;
  * spawn -> the server's "indexed N workspace files" log message, against `ruff check` of the tree;
  * the server's peak RSS (VmHWM) after the keystroke runs;
  * `ruff server`: its start and its didChange -> publishDiagnostics for the same edits.

--starts-only measures the starts alone (denpex cold and warm, `ruff server`'s start): no keystrokes, no index.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_lsp import CLIENT_REQUESTS, Client, diagnostics_for, pct, ruff_command  # noqa: E402

NEW_FILE = """import torch


def scale_of(t):
    m = t.abs().max()
    return m.item()


x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * scale_of(x)
g.replay()
"""

# (c) when the project has no capture that reaches another of its files: a pair of new files
REACHED_FILE = """import torch


def norm_scale(t):
    n = t.norm()
    return float(n.item())
"""
REACHING_FILE = """import torch

from reached_helper import norm_scale

x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x / norm_scale(x)
"""


@dataclass(frozen=True)
class Target:
    label: str
    rel: str  # relative to the workspace (or "extra:<name>" for a file of the temp folder)
    anchor: str  # the edited line is the first line containing this text


# per project: (b) deep in the import graph, (c) reached by a capture of another file (from `denpex scan`)
PROJECTS: dict[str, tuple[Target, Target | None]] = {
    "Megatron-LM": (
        Target("b deep", "megatron/core/transformer/transformer_layer.py",
               "pp_rank = parallel_state.get_pipeline_model_parallel_rank()"),
        Target("c reached", "megatron/core/transformer/moe/moe_utils.py",
               "permuted_probs = probs.T.contiguous().masked_select(routing_map.T.contiguous())"),
    ),
    "NeMo": (
        Target("b deep", "nemo/core/classes/module.py", "grad_map = {}"),
        Target("c reached", "nemo/collections/asr/parts/utils/batched_beam_decoding_utils.py",
               "self._max_length *= 2"),
    ),
    "DeepSpeed": (
        Target("b deep", "deepspeed/runtime/utils.py", "self.param_groups = []"),
        None,
    ),
}


class EnvClient(Client):
    """bench_lsp's client with its own environment, remembering when the index was reported complete."""

    def __init__(self, cmd: list[str], cwd: str, env: dict[str, str]) -> None:
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        self.messages = queue.Queue()
        self._id = 0
        self.indexed_at: float | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def wait(self, pred: Any, timeout: float = 120.0) -> tuple[float, dict[str, Any]]:
        def watch(m: dict[str, Any]) -> bool:
            if m.get("method") == "window/logMessage" and "workspace files" in m["params"].get("message", ""):
                self.indexed_at = time.perf_counter()
            return bool(pred(m))
        return super().wait(watch, timeout)

    def peak_rss_mb(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None


def start(cmd: list[str], env: dict[str, str], folders: list[Path], path: Path, text: str,
          peer: bool) -> tuple[EnvClient, float, str]:
    c = EnvClient(cmd, str(folders[0]), env)
    uri = path.as_uri()
    rid = c.send("initialize", {
        "processId": os.getpid(), "rootUri": folders[0].as_uri(),
        "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders],
        "capabilities": {"textDocument": {"publishDiagnostics": {"relatedInformation": True}},
                         "window": {"workDoneProgress": True}},
    }, request=True)
    c.wait(lambda m: m.get("id") == rid)
    c.send("initialized", {})
    c.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    t, _msg = c.wait(diagnostics_for(uri, None if peer else 1))
    return c, (t - c.t_spawn) * 1000, uri


def open_doc(c: EnvClient, path: Path, text: str, peer: bool) -> str:
    uri = path.as_uri()
    c.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    c.wait(diagnostics_for(uri, None if peer else 1), 900)  # a deep file's first analysis reads its importers
    return uri


def drain(c: EnvClient) -> None:
    """Drop what arrived before this edit (a publish of an earlier version is no answer to it)."""
    while True:
        try:
            _t, msg = c.messages.get_nowait()
        except queue.Empty:
            return
        if msg.get("method") in CLIENT_REQUESTS and "id" in msg:
            c._reply(msg)


def keystrokes(c: EnvClient, uri: str, text: str, anchor: str, n: int, peer: bool) -> tuple[list[float], set[int]]:
    lines = text.splitlines()
    line = next(i for i, s in enumerate(lines) if anchor in s)
    col = len(lines[line])
    out: list[float] = []
    counts: set[int] = set()
    for k in range(n):
        version = k + 2
        rng = {"start": {"line": line, "character": col},
               "end": {"line": line, "character": col + (k % 2)}}
        change = {"range": rng, "text": " " if k % 2 == 0 else ""}
        drain(c)
        t0 = time.perf_counter()
        c.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})

        def pred(m: dict[str, Any], v: int = version) -> bool:
            if m.get("method") != "textDocument/publishDiagnostics":
                return False
            p = m["params"]
            return bool(p["uri"] == uri and (p.get("version") == v or (peer and p.get("version") is None)))
        t1, msg = c.wait(pred)
        out.append((t1 - t0) * 1000)
        counts.add(len(msg["params"]["diagnostics"]))
    return out, counts


def stats(v: list[float]) -> dict[str, float]:
    return {"p50": round(pct(v, 0.5), 1), "p95": round(pct(v, 0.95), 1), "max": round(max(v), 1), "n": len(v)}


def run_workspace(ws: Path, args: argparse.Namespace, cmd: list[str], peer: list[str] | None) -> dict[str, Any]:
    deep, reached = PROJECTS.get(ws.name, (None, None))
    result: dict[str, Any] = {"workspace": str(ws), "files": sum(1 for _ in ws.rglob("*.py")),
                              "loadavg_at_start": [round(x, 1) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        extra = Path(tmp) / "extra"
        extra.mkdir()
        new = extra / "bench_new_capture.py"
        new.write_text(NEW_FILE)
        (extra / "reached_helper.py").write_text(REACHED_FILE)
        (extra / "reaching_train.py").write_text(REACHING_FILE)
        folders = [ws, extra]
        targets: list[tuple[str, Path, str]] = [("a new", new, "m = t.abs().max()")]
        if deep is not None:
            targets.append((deep.label, ws / deep.rel, deep.anchor))
        if reached is not None:
            targets.append((reached.label, ws / reached.rel, reached.anchor))
        else:
            targets.append(("c reached (new pair)", extra / "reached_helper.py", "n = t.norm()"))
        base_env = {**os.environ}
        # starts: a fresh cache dir each cold start, then a warm start on the last one
        cold: list[float] = []
        warm: list[float] = []
        for i in range(args.starts):
            cache = Path(tmp) / f"cache{i}"
            env = {**base_env, "DENPEX_CACHE_DIR": str(cache)}
            c, ms, _ = start(cmd, env, folders, new, NEW_FILE, peer=False)
            cold.append(ms)
            c.close()
            c, ms, _ = start(cmd, env, folders, new, NEW_FILE, peer=False)
            warm.append(ms)
            c.close()
        result["start_cold_ms"] = {"median": round(statistics.median(cold), 1), "all": [round(x) for x in cold]}
        result["start_warm_ms"] = {"median": round(statistics.median(warm), 1), "all": [round(x) for x in warm]}
        if args.starts_only:
            if peer is not None:
                pstarts = []
                for _ in range(args.starts):
                    c, ms, _ = start(peer, base_env, folders, new, NEW_FILE, peer=True)
                    pstarts.append(ms)
                    c.close()
                result["peer"] = {"name": "ruff server", "start_ms": {
                    "median": round(statistics.median(pstarts), 1), "all": [round(x) for x in pstarts]}}
            return result
        # keystrokes, after the background index is complete
        env = {**base_env, "DENPEX_CACHE_DIR": str(Path(tmp) / "cache0")}
        c, _ms, _ = start(cmd, env, folders, new, NEW_FILE, peer=False)
        if c.indexed_at is None:
            c.wait(lambda m: c.indexed_at is not None, 600)
        assert c.indexed_at is not None
        result["index_complete_ms"] = round((c.indexed_at - c.t_spawn) * 1000)
        time.sleep(0.5)
        keys: dict[str, Any] = {}
        for label, path, anchor in targets:
            text = path.read_text(encoding="utf-8")
            uri = new.as_uri() if path == new else open_doc(c, path, text, peer=False)
            lat, counts = keystrokes(c, uri, text, anchor, args.edits, peer=False)
            keys[label] = {**stats(lat), "findings_per_publish": sorted(counts), "file": str(path)}
            c.send("textDocument/didClose", {"textDocument": {"uri": uri}}) if path != new else None
            print(f"  denpex {label}: {keys[label]}", flush=True)
        result["keystroke_ms"] = keys
        result["peak_rss_mb"] = c.peak_rss_mb()
        c.close()
        # the peer, same files, same edits
        if peer is not None:
            pstarts = []
            for _ in range(args.starts):
                c, ms, _ = start(peer, base_env, folders, new, NEW_FILE, peer=True)
                pstarts.append(ms)
                c.close()
            c, _ms, _ = start(peer, base_env, folders, new, NEW_FILE, peer=True)
            pkeys: dict[str, Any] = {}
            for label, path, anchor in targets:
                text = path.read_text(encoding="utf-8")
                uri = new.as_uri() if path == new else open_doc(c, path, text, peer=True)
                lat, _counts = keystrokes(c, uri, text, anchor, args.edits, peer=True)
                pkeys[label] = stats(lat)
                if path != new:
                    c.send("textDocument/didClose", {"textDocument": {"uri": uri}})
                print(f"  ruff server {label}: {pkeys[label]}", flush=True)
            prss = c.peak_rss_mb()
            c.close()
            exe = peer[0]
            t0 = time.perf_counter()
            subprocess.run([exe, "check", "--no-cache", "--exit-zero", "--quiet", str(ws)],
                           capture_output=True, check=False)
            result["peer"] = {"name": "ruff server", "start_ms": {"median": round(statistics.median(pstarts), 1),
                                                                   "all": [round(x) for x in pstarts]},
                              "keystroke_ms": pkeys, "peak_rss_mb": prss,
                              "ruff_check_tree_ms": round((time.perf_counter() - t0) * 1000)}
    return result


def table(results: list[dict[str, Any]]) -> str:
    rows = ["| workspace | file | denpex p50 / p95 / max (ms) | ruff server p50 / p95 / max (ms) |", "|---|---|---|---|"]
    for r in results:
        name = Path(r["workspace"]).name
        for label, k in r["keystroke_ms"].items():
            p = r.get("peer", {}).get("keystroke_ms", {}).get(label)
            ps = f"{p['p50']} / {p['p95']} / {p['max']}" if p else "-"
            rows.append(f"| {name} | {label} | {k['p50']} / {k['p95']} / {k['max']} | {ps} |")
    rows += ["", "| workspace | start cold | start warm | index complete | RSS | ruff server start | ruff check tree |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        p = r.get("peer", {})
        rows.append(f"| {Path(r['workspace']).name} | {r['start_cold_ms']['median']} ms | {r['start_warm_ms']['median']} ms"
                    f" | {r['index_complete_ms']} ms | {r['peak_rss_mb']:.0f} MB"
                    f" | {p.get('start_ms', {}).get('median', '-')} ms | {p.get('ruff_check_tree_ms', '-')} ms |")
    return "\n".join(rows)


def start_table(results: list[dict[str, Any]]) -> str:
    rows = ["| workspace | start cold (all) | start warm (all) | ruff server start |", "|---|---|---|---|"]
    for r in results:
        p = r.get("peer", {}).get("start_ms", {})
        rows.append(f"| {Path(r['workspace']).name} | {r['start_cold_ms']['median']} ms {r['start_cold_ms']['all']}"
                    f" | {r['start_warm_ms']['median']} ms {r['start_warm_ms']['all']} | {p.get('median', '-')} ms |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", action="append", type=Path,
                    help="a project tree (repeatable; default /tmp/denpex-eco/Megatron-LM)")
    ap.add_argument("--edits", type=int, default=40, help="keystrokes per file (typed and deleted in turn)")
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results_lsp_workspace.json")
    ap.add_argument("--label", default="", help="a note stored with the results (e.g. the commit)")
    ap.add_argument("--starts-only", action="store_true",
                    help="only the start figures (no keystrokes, no index); give --out another file")
    args = ap.parse_args()
    workspaces = args.workspace or [Path("/tmp/denpex-eco/Megatron-LM")]
    cmd = [sys.executable, "-m", "denpex", "serve"]
    peer = ruff_command()
    results = []
    for ws in workspaces:
        print(f"{ws}:", flush=True)
        results.append(run_workspace(ws.resolve(), args, cmd, peer))
    load = os.getloadavg()
    doc = {"label": args.label, "cpus": os.cpu_count(), "loadavg": [round(x, 1) for x in load], "results": results}
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(start_table(results) if args.starts_only else table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
