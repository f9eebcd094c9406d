"""`denpex diagnose` against the seeds' grep on six log shapes (issue 22, "Speed on every shape").

    python bench/bench_shapes.py                      # six 1 GiB shapes (~6.5 GB under /tmp)
    python bench/bench_shapes.py --size 64 --runs 2   # a quick look
    python bench/bench_shapes.py --shape frame-dense --shape long-ansi

Shapes (bench/gen_log.py and bench/gen_shapes.py write them under --data-dir, reused while their
generator and size match; nothing is committed): ``gen_log`` (a 64-rank torchrun log, one capture
failure near the end), ``frame-dense`` (a fifth of lines traceback frames), ``nccl-dense``
(NCCL_DEBUG=INFO), ``benign-errors`` (lines full of error words, no failure), ``long-ansi`` (lines of
50-700 KiB: coloured progress bars redrawn with bare CRs), ``repeated-rank`` (one rank's log 64 times);
``benign-colour`` and ``no-failure`` on request. Each generator knows the verdict (rule, line, rank)
or that there is none and what the first-error answer must be; a wrong answer voids the shape.

Per shape: one untimed run of each (page cache, .pyc), then ``--runs`` rounds of the peer
(``rg -n -i 'error|exception|timeout|failed' FILE``, output to a file) and ``denpex diagnose FILE
--format json``, alternating; the median and best wall time of each, their CPU seconds (the process and
the workers it reaped), and the ratio of medians (target <= 1.0).

Peak memory, per process: a sampler (every 20 ms) follows the process tree through
/proc/PID/task/TID/children and keeps each process's VmHWM (the kernel's own peak RSS, so a sample
between peaks loses nothing) and its largest RssAnon; ``peak_rss_mb`` is the largest single process
(ru_maxrss from wait4, exact), ``tree_rss_mb`` the sum of every process's VmHWM (an upper bound of the
tree at any one time; forked workers share the parent's pages, counted in each). ripgrep maps the file
it reads, so its RSS counts the mapped page cache (about the file's size); its ``anon_mb`` is what it
allocated. Figures go to bench/results_shapes.json (target: tree RSS <= 200 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_diagnose import _load, denpex_cmd, ensure_log, warm  # noqa: E402
from gen_shapes import GENERATOR_VERSION, ShapeExpected, make  # noqa: E402

PEER = ["-n", "-i", "error|exception|timeout|failed"]
SIX = ("gen_log", "frame-dense", "nccl-dense", "benign-errors", "long-ansi", "repeated-rank")
EXTRA = ("benign-colour", "no-failure")
TARGET_RATIO = 1.0
TARGET_RSS_MB = 200.0
SAMPLE_S = 0.02


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out += [int(x) for x in fh.read().split()]
        except OSError:
            pass
    return out


def _status_kib(pid: int) -> tuple[int, int]:
    """(VmHWM, RssAnon) of pid in KiB, or (0, 0) once it is gone."""
    hwm = anon = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1])
                elif line.startswith(b"RssAnon:"):
                    anon = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return hwm, anon


def timed(cmd: list[str], ok: tuple[int, ...], stdout_path: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run cmd (stdout to stdout_path); wall and CPU seconds, peak RSS per process and of the tree."""
    peaks: dict[int, list[int]] = {}  # pid -> [VmHWM, RssAnon] peaks, KiB
    with open(stdout_path, "wb") as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                todo = [p.pid]
                while todo:
                    pid = todo.pop()
                    todo += _children(pid)
                    hwm, anon = _status_kib(pid)
                    got = peaks.setdefault(pid, [0, 0])
                    got[0], got[1] = max(got[0], hwm), max(got[1], anon)
                stop.wait(SAMPLE_S)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        stop.set()
        th.join()
        code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read()
    if code not in ok:
        raise SystemExit(f"{cmd[0]} exited {code}: {stderr.decode(errors='replace')[-2000:]}")
    top = max(ru.ru_maxrss, peaks.get(p.pid, [0, 0])[0])
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "peak_rss_mb": top / 1024,
            "tree_rss_mb": (top + sum(v[0] for k, v in peaks.items() if k != p.pid)) / 1024,
            "anon_mb": max((v[1] for v in peaks.values()), default=0) / 1024, "processes": len(peaks)}


def check(doc: dict[str, Any], exp: ShapeExpected) -> list[str]:
    """Why the answer is wrong (empty: right): the verdict's rule, line and rank, or no verdict and
    the first-error answer the generator expects."""
    v = doc.get("verdict") or {}
    errs: list[str] = []
    if v.get("rule") != exp.verdict:
        errs.append(f"verdict {v.get('rule')!r} != {exp.verdict!r}")
    if exp.verdict is not None:
        errs += [f"{k} {v.get(k)!r} != {want!r}" for k, want in (("line", exp.line), ("rank", exp.rank))
                 if v.get(k) != want]
        return errs
    fe = doc.get("first_error")
    if exp.first_error is None:
        if fe is not None:
            errs.append(f"first_error {fe.get('found')!r} {fe.get('text')!r}: expected none")
    elif fe is None:
        errs.append(f"no first_error: expected {exp.first_error}")
    else:
        errs += [f"first_error {k} {fe.get(k)!r} != {want!r}" for k, want in exp.first_error.items()
                 if fe.get(k) != want]
    return errs


def ensure(shape: str, size_mb: float, seed: int, data_dir: Path) -> ShapeExpected:
    """The shape's file under data_dir, generated once (reused while its generator and size match)."""
    if shape == "gen_log":
        e = ensure_log(size_mb, seed, data_dir)
        return ShapeExpected(e.path, "gen_log", e.bytes, e.lines, seed, e.rule, e.line, e.rank)
    path = data_dir / f"{shape}-{size_mb:g}mb-s{seed}.log"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        try:
            m = json.loads(meta.read_text())
            if m.get("generator_version") == GENERATOR_VERSION and m.get("bytes") == path.stat().st_size:
                return ShapeExpected(**m)
        except (ValueError, TypeError):
            pass
    print(f"generating {path} ...", file=sys.stderr, flush=True)
    source = ensure_log(size_mb, seed, data_dir).path if shape == "no-failure" else None
    exp = make(shape, path, int(size_mb * (1 << 20)), seed, source)
    meta.write_text(json.dumps(asdict(exp), indent=1))
    return exp


def _row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"runs_s": [round(r["wall"], 3) for r in runs],
            "median_s": round(statistics.median(r["wall"] for r in runs), 3),
            "best_s": round(min(r["wall"] for r in runs), 3),
            "cpu_s": round(statistics.median(r["cpu"] for r in runs), 3),
            "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
            "tree_rss_mb": round(max(r["tree_rss_mb"] for r in runs), 1),
            "anon_mb": round(max(r["anon_mb"] for r in runs), 1),
            "processes": max(r["processes"] for r in runs)}


def duel(exp: ShapeExpected, rg: str, runs: int, scratch: Path) -> dict[str, Any]:
    peer = [rg, *PEER, exp.path]
    dx = [*denpex_cmd(), "diagnose", exp.path, "--format", "json"]
    out = str(scratch / "out")
    # denpex as installed: with its modules' bytecode written (an environment with PYTHONDONTWRITEBYTECODE
    # recompiled every module edited since its .pyc on each run, 0.05-0.1 s of CPU in a shared checkout)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    timed(peer, (0, 1), out)
    timed(dx, (0, 1), out, env)
    rows: dict[str, list[dict[str, Any]]] = {"rg": [], "denpex": []}
    errors: list[str] = []
    doc: dict[str, Any] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(runs):
        rows["rg"].append(timed(peer, (0, 1), out))
        rows["denpex"].append(timed(dx, (0, 1), out, env))
        doc = json.loads(Path(out).read_text())
        errors += check(doc, exp)
        loads.append(os.getloadavg()[0])
        if errors:
            break
    r, d = _row(rows["rg"]), _row(rows["denpex"])
    v = doc.get("verdict") or {}
    fe = doc.get("first_error")
    return {
        "input": {"path": exp.path, "mib": round(exp.bytes / (1 << 20), 1), "lines": exp.lines},
        "expected": {"rule": exp.verdict, "line": exp.line, "rank": exp.rank, "first_error": exp.first_error},
        "rg": {"cmd": peer, **r}, "denpex": {"cmd": dx, **d},
        "answer": {"rule": v.get("rule"), "line": v.get("line"), "rank": v.get("rank"),
                   "first_error": {k: fe.get(k) for k in ("found", "line", "kind")} if fe else None},
        "right": not errors, "errors": errors,
        "ratio_median": round(d["median_s"] / r["median_s"], 2),
        "ratio_best": round(d["best_s"] / r["best_s"], 2),
        # CPU seconds per GiB (medians): less sensitive than wall time to other work on the machine
        "cpu_s_per_gib": {"rg": round(r["cpu_s"] / (exp.bytes / (1 << 30)), 3),
                          "denpex": round(d["cpu_s"] / (exp.bytes / (1 << 30)), 3)},
        "load_1min": [round(x, 2) for x in loads],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=float, default=1024.0, help="MiB per shape (default 1024)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each, alternating (default 3)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--shape", action="append", choices=(*SIX, *EXTRA), default=None,
                    help="this shape only (repeatable; default the six)")
    ap.add_argument("--rg", default=None)
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "denpex-bench")
    ap.add_argument("--out", type=Path, default=HERE / "results_shapes.json")
    args = ap.parse_args(argv)
    rg = args.rg or shutil.which("rg")
    if not rg:
        raise SystemExit("ripgrep not found: apt-get install ripgrep, or pass --rg")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    shapes = args.shape or list(SIX)
    exps = {s: ensure(s, args.size, args.seed, args.data_dir) for s in shapes}
    load_before = _load()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for s in shapes:
            warm(Path(exps[s].path))
            results[s] = duel(exps[s], rg, args.runs, Path(scratch))
            x = results[s]
            print(f"{s:14} rg {x['rg']['median_s']:6.3f} s  denpex {x['denpex']['median_s']:6.3f} s "
                  f"(cpu {x['denpex']['cpu_s']:.2f} s against rg's {x['rg']['cpu_s']:.2f} s, {x['denpex']['processes']} proc, tree "
                  f"{x['denpex']['tree_rss_mb']:.0f} MB)  {x['ratio_median']:.2f}x  "
                  f"{'right' if x['right'] else 'WRONG: ' + '; '.join(x['errors'])}  load {x['load_1min']}",
                  flush=True)
    doc = {
        "schema": "denpex.bench.shapes/1",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), **load_before},
        "load_after": _load(),
        "size_mib": args.size, "runs": args.runs,
        "results": results,
        "targets": {"ratio_max": TARGET_RATIO, "tree_rss_mb_max": TARGET_RSS_MB},
        "meets": {s: x["right"] and x["ratio_median"] <= TARGET_RATIO
                  and x["denpex"]["tree_rss_mb"] <= TARGET_RSS_MB for s, x in results.items()},
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"written {args.out}")
    return 0 if all(x["right"] for x in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
