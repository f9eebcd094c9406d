"""Benchmark `denpex diagnose` against ripgrep on a generated multi-rank log (issue 2, "Must show").

    python bench/bench_diagnose.py                 # 1 GiB log (generated once into bench/data/)
    python bench/bench_diagnose.py --size-mb 128   # smaller, for a quick look

Steps: generate (or reuse) a seeded torchrun log with one `.item()`-in-capture failure near the
end; write the rule book's literal anchors (what denpex's prefilter searches) to a patterns
file; warm the page cache; time `rg -F -c -f patterns FILE` and `denpex diagnose FILE --format
json` as subprocesses, alternating, best of N each, with the peak RSS of each process from
os.wait4; check that denpex names the right rule, rank and line (a wrong answer voids the run);
time in-process `diagnose_text` on a 10,000-line pasted traceback (median of 20 after warm-up).
Figures go to bench/out/diagnose.json. Targets: denpex <= 3x ripgrep's wall time, peak RSS <=
200 MB, pasted traceback <= 20 ms. The machine's load is recorded next to the figures.
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
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_log import GENERATOR_VERSION, Expected, generate, pasted_traceback  # noqa: E402

TARGET_RATIO = 3.0
TARGET_RSS_MB = 200.0
TARGET_TEXT_MS = 20.0


def _load() -> dict[str, object]:
    one, five, fifteen = os.getloadavg()
    up = ""
    if shutil.which("uptime"):
        up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return {"loadavg": [round(one, 2), round(five, 2), round(fifteen, 2)], "uptime": up,
            "cpus": os.cpu_count()}


def ensure_log(size_mb: float, seed: int, data_dir: Path) -> Expected:
    path = data_dir / f"torchrun-64r-{size_mb:g}mb-s{seed}.log"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        try:
            m = json.loads(meta.read_text())
            if m.get("generator_version") == GENERATOR_VERSION and m.get("bytes") == path.stat().st_size:
                return Expected(**m)
        except (ValueError, TypeError):
            pass
    print(f"generating {path} ({size_mb:g} MiB, seed {seed}) ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    exp = generate(path, int(size_mb * (1 << 20)), seed)
    print(f"  done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    meta.write_text(json.dumps(asdict(exp), indent=1))
    return exp


def write_patterns(path: Path) -> list[str]:
    from denpex.logs.matcher import Matcher
    from denpex.rulebook import load_rulebook

    anchors = Matcher(load_rulebook()).anchors
    path.write_text("".join(a + "\n" for a in anchors))
    return anchors


def warm(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        while fh.read(16 << 20):
            pass
    return time.perf_counter() - t0


def timed(cmd: list[str], ok_codes: tuple[int, ...]) -> tuple[float, int, bytes, int]:
    """Run cmd; return (wall seconds, peak RSS KiB of that process, stdout, exit code)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if code not in ok_codes:
        raise SystemExit(f"{cmd[0]} exited {code}: {stderr.decode(errors='replace')[-2000:]}")
    return wall, ru.ru_maxrss, stdout, code


def denpex_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "denpex"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "denpex"]


def check_verdict(doc: dict, exp: Expected) -> list[str]:
    """Why this verdict is wrong (empty list: right)."""
    v = doc.get("verdict")
    if not v:
        return ["no verdict"]
    errs = []
    if v.get("rule") != exp.rule:
        errs.append(f"rule {v.get('rule')!r} != {exp.rule!r}")
    if v.get("rank") != exp.rank:
        errs.append(f"rank {v.get('rank')!r} != {exp.rank}")
    if v.get("line") != exp.line:
        errs.append(f"line {v.get('line')!r} != {exp.line}")
    return errs


def bench_text(lines: int, runs: int) -> dict[str, object]:
    from denpex.logs.diagnose import diagnose_text

    text, exp = pasted_traceback(lines)
    d = diagnose_text(text)  # warm-up: loads the rule book, compiles the matcher
    for _ in range(3):
        d = diagnose_text(text)
    errs = check_verdict(d.to_json(), exp)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        diagnose_text(text)
        times.append((time.perf_counter() - t0) * 1000)
    return {"lines": text.count("\n"), "bytes": len(text.encode()), "runs": runs,
            "median_ms": round(statistics.median(times), 3), "min_ms": round(min(times), 3),
            "max_ms": round(max(times), 3), "verdict_ok": not errs, "verdict_errors": errs,
            "target_ms": TARGET_TEXT_MS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1024.0, help="log size in MiB (default 1024)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each tool; the best counts (default 3)")
    ap.add_argument("--rg", default=None, help="ripgrep binary (default: rg next to python, then PATH)")
    ap.add_argument("--text-lines", type=int, default=10_000)
    ap.add_argument("--text-runs", type=int, default=20)
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "diagnose.json")
    args = ap.parse_args(argv)

    rg = args.rg or (str(Path(sys.executable).parent / "rg")
                     if (Path(sys.executable).parent / "rg").exists() else shutil.which("rg"))
    if not rg:
        raise SystemExit("ripgrep not found: pip install --only-binary :all: ripgrep, or pass --rg")

    load_before = _load()
    exp = ensure_log(args.size_mb, args.seed, args.data_dir)
    log = Path(exp.path)
    patterns = args.data_dir / "anchors.txt"
    anchors = write_patterns(patterns)
    warm_s = warm(log)

    rg_cmd = [rg, "-F", "-c", "-f", str(patterns), str(log)]
    dx_cmd = [*denpex_cmd(), "diagnose", str(log), "--format", "json"]
    timed(rg_cmd, (0, 1))  # one untimed run each: page cache, binaries, .pyc files
    timed(dx_cmd, (0, 1))
    rg_runs: list[tuple[float, int]] = []
    dx_runs: list[tuple[float, int]] = []
    rg_count = ""
    errors: list[str] = []
    doc: dict = {}
    for _ in range(args.repeat):
        w, rss, out, _code = timed(rg_cmd, (0, 1))
        rg_runs.append((w, rss))
        rg_count = out.decode().strip()
        w, rss, out, code = timed(dx_cmd, (0, 1))
        dx_runs.append((w, rss))
        doc = json.loads(out)
        errors = check_verdict(doc, exp) + ([] if code == 1 else [f"exit code {code}, expected 1"])
        if errors:
            break
    text = bench_text(args.text_lines, args.text_runs)
    load_after = _load()

    rg_best = min(w for w, _ in rg_runs)
    dx_best = min(w for w, _ in dx_runs)
    dx_rss_mb = max(r for _, r in dx_runs) / 1024
    rg_rss_mb = max(r for _, r in rg_runs) / 1024
    ratio = dx_best / rg_best
    v = doc.get("verdict") or {}
    result = {
        "schema": "denpex.bench.diagnose/1",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), **load_before},
        "load_after": load_after,
        "log": {**asdict(exp), "mib": round(exp.bytes / (1 << 20), 1), "page_cache_warm_s": round(warm_s, 2)},
        "patterns": {"file": str(patterns), "count": len(anchors)},
        "ripgrep": {"cmd": rg_cmd, "runs_s": [round(w, 3) for w, _ in rg_runs], "best_s": round(rg_best, 3),
                    "peak_rss_mb": round(rg_rss_mb, 1), "matching_lines": rg_count},
        "denpex": {"cmd": dx_cmd, "runs_s": [round(w, 3) for w, _ in dx_runs], "best_s": round(dx_best, 3),
                   "peak_rss_mb": round(dx_rss_mb, 1),
                   "verdict": {k: v.get(k) for k in ("rule", "rank", "line", "confidence", "via")},
                   "findings": len(doc.get("findings", [])),
                   "gib_per_s": round(exp.bytes / (1 << 30) / dx_best, 2)},
        "ratio": round(ratio, 2),
        "text": text,
        "valid": not errors and bool(text["verdict_ok"]),
        "errors": errors + [f"pasted text: {e}" for e in text["verdict_errors"]],  # type: ignore[operator]
        "targets": {"ratio_max": TARGET_RATIO, "rss_mb_max": TARGET_RSS_MB, "text_ms_max": TARGET_TEXT_MS},
        "meets_targets": (not errors and ratio <= TARGET_RATIO and dx_rss_mb <= TARGET_RSS_MB
                          and float(text["median_ms"]) <= TARGET_TEXT_MS),  # type: ignore[arg-type]
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")

    def mark(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    print(f"log      {exp.path}  {exp.bytes / (1 << 20):.1f} MiB, {exp.lines:,} lines, "
          f"{len(anchors)} literal anchors")
    print(f"load     before: {load_before['loadavg']}  after: {load_after['loadavg']}  "
          f"({load_before['cpus']} CPUs)")
    print(f"{'':10}{'best s':>9}{'peak RSS MB':>13}  runs s")
    print(f"{'ripgrep':10}{rg_best:9.3f}{rg_rss_mb:13.1f}  {' '.join(f'{w:.3f}' for w, _ in rg_runs)}")
    print(f"{'denpex':10}{dx_best:9.3f}{dx_rss_mb:13.1f}  {' '.join(f'{w:.3f}' for w, _ in dx_runs)}")
    print(f"ratio    {ratio:.2f}x ripgrep (target <= {TARGET_RATIO:g}x: {mark(ratio <= TARGET_RATIO)}); "
          f"peak RSS {dx_rss_mb:.1f} MB (target <= {TARGET_RSS_MB:g}: {mark(dx_rss_mb <= TARGET_RSS_MB)})")
    print(f"pasted   {text['lines']:,} lines: diagnose_text median {text['median_ms']} ms of {text['runs']} "
          f"(min {text['min_ms']}, max {text['max_ms']}; target <= {TARGET_TEXT_MS:g} ms: "
          f"{mark(float(text['median_ms']) <= TARGET_TEXT_MS)})")  # type: ignore[arg-type]
    print(f"verdict  {v.get('rule')} rank {v.get('rank')} line {v.get('line')} "
          f"(expected {exp.rule} rank {exp.rank} line {exp.line})")
    if result["errors"]:
        print("VOID: the diagnosis is wrong: " + "; ".join(result["errors"]))  # type: ignore[arg-type]
    print(f"written  {args.out}")
    return 0 if result["valid"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
