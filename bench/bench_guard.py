"""Overhead of the runtime guard (denpex.guard) on a GPU, against the same program without it, same run.

Measured in child processes that alternate off / on (three of each, medians reported):
- capture: time to capture one training-shaped forward (8 Linear+GELU layers, batch 64), per capture;
- replay, host side: time of the g.replay() call itself for a graph of 1 external input and one of 200
  (two kernels: cat and sum, so launching stays cheap and the guard's host work shows), over 2,000 replays
  with no synchronisation in between;
- decode step: a 24-layer batch-1 decode-shaped graph, replay + synchronize per step, so the percentage is
  the guard's cost against a typical decode step's wall time;
- sync: 200 guarded replays under torch.cuda.set_sync_debug_mode("error"): the guard adds no device sync.

Usage: python bench/bench_guard.py [--out FILE.json]"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def child(on: bool) -> dict[str, Any]:
    import torch

    if on:
        sys.path.insert(0, str(REPO / "server"))
        import denpex.guard

        denpex.guard.enable(os.environ.get("DENPEX_GUARD") or "refuse")
    if os.environ.get("BENCH_GC_OFF") == "1":
        import gc

        gc.disable()
    dev = "cuda"
    torch.manual_seed(0)
    out: dict[str, Any] = {}
    # capture
    layers = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(1024, 1024), torch.nn.GELU())]).to(dev)
    x = torch.randn(64, 1024, device=dev)
    with torch.no_grad():
        for _ in range(3):
            layers(x)
    torch.cuda.synchronize()
    times = []
    graphs = []
    for _ in range(20):
        g = torch.cuda.CUDAGraph()
        t0 = time.perf_counter()
        with torch.no_grad(), torch.cuda.graph(g):
            layers(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        graphs.append(g)
    out["capture_ms"] = statistics.median(times) * 1e3
    del graphs
    # replay, host side, 1 and 200 inputs
    for n in (1, 200):
        xs = [torch.randn(256, device=dev) for _ in range(n)]
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            total = torch.cat(xs).sum()  # two kernels read all n inputs: the replay call stays short
        for _ in range(50):
            g.replay()
        torch.cuda.synchronize()
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(2000):
                g.replay()
            best.append((time.perf_counter() - t0) / 2000)
            torch.cuda.synchronize()
        out[f"replay_{n}_us"] = min(best) * 1e6
        del total  # the graph's output, held while it was replayed
    # decode step
    blocks = torch.nn.Sequential(*[m for _ in range(24) for m in (torch.nn.Linear(2048, 2048), torch.nn.SiLU())]).to(dev).half()
    tok = torch.randn(1, 2048, device=dev, dtype=torch.half)
    with torch.no_grad():
        for _ in range(3):
            blocks(tok)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        y = blocks(tok)
    steps = []
    for _ in range(300):
        t0 = time.perf_counter()
        tok.copy_(y[:, :2048])
        g.replay()
        torch.cuda.synchronize()
        steps.append(time.perf_counter() - t0)
    out["decode_step_us"] = statistics.median(steps[50:]) * 1e6
    if on:
        torch.cuda.set_sync_debug_mode("error")
        try:
            for _ in range(200):
                g.replay()
            out["sync_debug_error_ok"] = True
        except RuntimeError as exc:
            out["sync_debug_error_ok"] = f"{exc}"
        finally:
            torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()
        out["findings"] = [f.line() for f in denpex.guard.findings()]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", choices=["on", "off"])
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child == "on")))
        return 0
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    for _ in range(3):
        for mode in ("off", "on"):
            p = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True, text=True,
                               env={**os.environ, "DENPEX_GUARD_ALLOC": "1"})
            if p.returncode != 0:
                sys.stderr.write(p.stderr)
                return 1
            runs[mode].append(json.loads(p.stdout.strip().splitlines()[-1]))
    keys = ["capture_ms", "replay_1_us", "replay_200_us", "decode_step_us"]
    med = {m: {k: statistics.median(r[k] for r in runs[m]) for k in keys} for m in runs}
    import torch

    report = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "runs": runs, "median": med,
              "added": {k: med["on"][k] - med["off"][k] for k in keys},
              "decode_overhead_pct": 100 * (med["on"]["decode_step_us"] - med["off"]["decode_step_us"])
              / med["off"]["decode_step_us"],
              "sync_debug_error_ok": all(r.get("sync_debug_error_ok") is True for r in runs["on"]),
              "findings_on_clean_bench": sorted({f for r in runs["on"] for f in r.get("findings", [])})}
    text = json.dumps(report, indent=1)
    print(text)
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
