"""Closed loop on a GPU: every source rule's claim and every fix Denpex offers, checked on real CUDA.

For each case in tests/gpu/cases/<rule-id>[--variant].py:
  1. run it with DENPEX_EAGER=1: the same computation without capture; its `RESULT:` line is the reference;
  2. run it as is: it must fail with the rule's log signature (`denpex diagnose` names the rule) or, for a
     silent rule, finish and print a RESULT different from eager;
  3. feed that real output to `denpex diagnose --format json`: the verdict must name the rule, and the
     innermost frame in the case file must be the line `denpex scan` flags (error rules);
  4. run `denpex scan --format json` on the case: the rule must fire (on that line);
  5. for each finding of the rule and each fix it offers (the Python API: apply_edits(text, fix.edits)),
     run the fixed file: it must exit 0 and print a RESULT equal to eager (rtol/atol 1e-3).

With --multi (needs 2 GPUs): a torchrun job (nproc 2) where rank 1 fails inside capture and lingers while
rank 0 waits in all_reduce until the NCCL watchdog fires; `denpex diagnose` must name rank 1 and the capture
error, not torchrun's "Root Cause" rank 0.

Writes <out>/report.json, <out>/report.md and the logs under <out>/logs/. Needs an NVIDIA GPU, PyTorch and
Denpex importable by the running interpreter. Usage: python tests/gpu/closed_loop.py --out DIR [--multi]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
MULTI = HERE / "multi" / "rank1_capture_fails.py"

# Rules whose failure is a silently wrong result: no error, so nothing for `denpex diagnose` to name.
SILENT = {
    "replay-rebound-static-input",
    "replay-freed-input",
    "replay-output-kept-without-clone",
    "replay-frozen-python-scalar",
    "optim-capturable-float-lr",
    "replay-python-side-effects",
}

# Verdicts accepted in place of the rule itself, each with the reason. Empty: every case must be named exactly.
ACCEPTED_PARENT: dict[str, tuple[str, str]] = {}

# Source rules without a case, and why (their claim is not a failure observable on one GPU on this stack).
NOT_OBSERVABLE = {
    "empty-cache-around-capture": "info rule; empty_cache() in or around capture is harmless on torch 2.11 (FINDINGS 13, 14)",
    "pinned-nonblocking-copy": "info rule; a pinned non_blocking copy in capture is legal (FINDINGS 12)",
    "rng-default-generator": "info rule; the default generator works in capture (FINDINGS 20)",
    "rng-state-api-in-capture": "get_rng_state()/checkpoint do not fail in capture on torch 2.11 (FINDINGS conclusion 4)",
    "capture-foreign-thread": "a race with the DataLoader pin-memory thread (15/20 runs failed in FINDINGS 69); "
    "not a deterministic closed-loop case",
}

# The generic fix every capture-region finding offers; reported per fix, and kept apart from the rule's own fixes
# in "verified" (a rule's claim should not hang on it). Until the run of 2026-11-30 02:36 it left every
# g.replay() in place and failed for every case that replays; it now recomputes the captured code at each replay.
EAGER_FALLBACK = "Run without CUDA-graph capture (eager fallback)"

RTOL = ATOL = 1e-3
RESULT_RE = re.compile(r"^RESULT:(.*)$", re.M)


def rule_of(case: Path) -> str:
    return case.stem.split("--", 1)[0]


def parse_result(text: str) -> list[float] | None:
    m = RESULT_RE.findall(text)
    if not m:
        return None
    try:
        return [float(v) for v in m[-1].split()]
    except ValueError:
        return None


def close(a: list[float] | None, b: list[float] | None) -> bool:
    if a is None or b is None or len(a) != len(b):
        return False
    return all(math.isclose(x, y, rel_tol=RTOL, abs_tol=ATOL) for x, y in zip(a, b, strict=True))


def run_py(path: Path, log: Path, *, eager: bool, timeout: int, tag: str) -> dict[str, Any]:
    env = dict(os.environ)
    env.update(PYTHONUNBUFFERED="1", TORCHINDUCTOR_COMPILE_THREADS="1",
               TORCHINDUCTOR_CACHE_DIR=f"/tmp/dpx_ind_{tag}")
    env.pop("TORCH_SHOW_CPP_STACKTRACES", None)
    env.pop("DENPEX_EAGER", None)
    if eager:
        env["DENPEX_EAGER"] = "1"
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env=env, timeout=timeout, cwd=str(path.parent))
        rc, out = p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, out = 124, (e.stdout or b"").decode("utf-8", "replace") + f"\n(timeout {timeout}s)\n"
    log.write_text(out, encoding="utf-8")
    return {"rc": rc, "result": parse_result(out), "seconds": round(time.monotonic() - t0, 1), "log": log.name}


def denpex(*args: str, stdin: str | None = None) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "denpex", *args], input=stdin, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout


def diagnose(log: Path) -> dict[str, Any]:
    rc, out = denpex("diagnose", "--format", "json", str(log))
    try:
        d = json.loads(out)
    except json.JSONDecodeError:
        return {"rc": rc, "error": out[-400:]}
    v = d.get("verdict") or {}
    return {"rc": rc, "rule": v.get("rule"), "via": v.get("via"), "rank": v.get("rank"), "text": v.get("text"),
            "frames": v.get("frames") or [], "summary": d.get("summary")}


def scan_lines(case: Path, rule: str) -> list[int]:
    _rc, out = denpex("scan", str(case), "--format", "json")
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        return []
    items = data.get("diagnostics", []) if isinstance(data, dict) else data
    lines = []
    for f in items:
        if f.get("rule") == rule:
            line = f.get("line", f.get("start_line"))
            if isinstance(line, dict):
                line = line.get("line")
            lines.append(int(line))
    return sorted(set(lines))


def versions() -> dict[str, Any]:
    info: dict[str, Any] = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                            "python": sys.version.split()[0]}
    try:
        import torch

        info.update(torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                    gpu=torch.cuda.get_device_name(0), gpu_count=torch.cuda.device_count(),
                    capability=".".join(map(str, torch.cuda.get_device_capability(0))))
        try:
            info["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception as e:
            info["nccl"] = f"n/a ({e})"
    except Exception as e:
        info["torch_error"] = repr(e)
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        info["driver"] = q.stdout.strip().splitlines()[0] if q.stdout.strip() else None
    except Exception:
        info["driver"] = None
    try:
        import denpex

        info["denpex"] = getattr(denpex, "__version__", "?")
    except Exception:
        pass
    return info


def make_fixes(case: Path, rule: str, fixdir: Path) -> list[dict[str, Any]]:
    from denpex.source import analyse_source, apply_edits

    text = case.read_text(encoding="utf-8")
    out = []
    for fi, finding in enumerate(f for f in analyse_source(text, str(case)) if f.rule == rule):
        for xi, fx in enumerate(finding.fixes):
            path = fixdir / f"{case.stem}__f{fi}x{xi}.py"
            path.write_text(apply_edits(text, fx.edits), encoding="utf-8")
            out.append({"finding_line": finding.start_line + 1, "title": fx.title, "safety": fx.safety,
                        "file": path})
    return out


def innermost_case_line(frames: list[dict[str, Any]], case: Path) -> int | None:
    lines = [f["line"] for f in frames if Path(str(f.get("path", ""))).name == case.name]
    return lines[-1] if lines else None


def single_gpu(out: Path, jobs: int, timeout: int, only: set[str]) -> list[dict[str, Any]]:
    logs, fixdir = out / "logs", out / "fixed"
    logs.mkdir(parents=True, exist_ok=True)
    fixdir.mkdir(parents=True, exist_ok=True)
    cases = sorted(p for p in CASES.glob("*.py") if not only or rule_of(p) in only or p.stem in only)
    plan: dict[str, dict[str, Any]] = {}
    tasks = []
    for c in cases:
        rule = rule_of(c)
        fixes = make_fixes(c, rule, fixdir)
        plan[c.stem] = {"case": c, "rule": rule, "fixes": fixes}
        tasks.append((c.stem, "eager", c, logs / f"{c.stem}.eager.log", True))
        tasks.append((c.stem, "failing", c, logs / f"{c.stem}.log", False))
        for i, fx in enumerate(fixes):
            tasks.append((c.stem, f"fix{i}", fx["file"], logs / f"{fx['file'].stem}.log", False))
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    with cf.ThreadPoolExecutor(jobs) as ex:
        futs = {ex.submit(run_py, path, log, eager=eager, timeout=timeout, tag=f"{stem}_{kind}"): (stem, kind)
                for stem, kind, path, log, eager in tasks}
        for fut in cf.as_completed(futs):
            runs[futs[fut]] = fut.result()

    results = []
    for stem, p in plan.items():
        case, rule = p["case"], p["rule"]
        silent = rule in SILENT
        eager, failing = runs[(stem, "eager")], runs[(stem, "failing")]
        r: dict[str, Any] = {"case": f"cases/{case.name}", "rule": rule, "silent": silent,
                             "eager": eager, "failing": dict(failing)}
        reasons: list[str] = []
        if eager["rc"] != 0 or eager["result"] is None:
            reasons.append(f"eager reference did not run (rc {eager['rc']})")
        lines = scan_lines(case, rule)
        r["scan"] = {"lines": lines, "ok": bool(lines)}
        if not lines:
            reasons.append("denpex scan does not flag the rule")
        # 2 + 3: the failure and its diagnosis
        if silent:
            differs = failing["rc"] == 0 and failing["result"] is not None and not close(failing["result"], eager["result"])
            r["failing"]["ok"] = differs
            if not differs:
                reasons.append(f"silent rule: expected exit 0 with a RESULT different from eager, got rc {failing['rc']}, "
                               f"{failing['result']} vs {eager['result']}")
            r["diagnose"] = {"ok": None, "note": "silent rule: nothing in the log to diagnose"}
        else:
            d = diagnose(logs / failing["log"])
            named = d.get("rule") == rule
            accepted = ACCEPTED_PARENT.get(rule)
            if not named and accepted and d.get("rule") == accepted[0]:
                named, d["accepted_parent"] = True, accepted[1]
            line = innermost_case_line(d.get("frames", []), case)
            line_ok = line is not None and line in lines
            d.pop("frames", None)
            d.update(line=line, rule_ok=named, line_ok=line_ok, ok=named and line_ok)
            r["diagnose"] = d
            fails = failing["rc"] != 0 and failing["result"] is None
            r["failing"]["ok"] = fails and named
            if not fails:
                reasons.append(f"expected a failure, got rc {failing['rc']} RESULT {failing['result']}")
            elif not named:
                reasons.append(f"diagnose names {d.get('rule')!r}, not {rule}")
            if not line_ok:
                r["line_mismatch"] = f"diagnosed line {line} is not the line scan flags {lines}"
            r["scan"]["ok"] = bool(lines)
        # 5: the fixes
        fx_out = []
        for i, fx in enumerate(p["fixes"]):
            run = runs[(stem, f"fix{i}")]
            ok = run["rc"] == 0 and close(run["result"], eager["result"])
            why = "" if ok else (f"rc {run['rc']}" if run["rc"] != 0 else f"RESULT {run['result']} != eager {eager['result']}")
            if not ok and run["rc"] != 0:
                d = diagnose(logs / run["log"])
                why += f"; diagnose: {d.get('rule')}: {(d.get('text') or '')[:160]}"
            fx_out.append({"title": fx["title"], "safety": fx["safety"], "finding_line": fx["finding_line"],
                           "fixed_file": f"fixed/{fx['file'].name}", "rc": run["rc"], "result": run["result"],
                           "log": run["log"], "ok": ok, "reason": why})
        r["fixes"] = fx_out
        r["claim_ok"] = not reasons
        r["line_ok"] = "line_mismatch" not in r
        r["reasons"] = reasons + ([r["line_mismatch"]] if "line_mismatch" in r else [])
        r["fixes_ok"] = sum(f["ok"] for f in fx_out)
        specific = [f for f in fx_out if f["title"] != EAGER_FALLBACK]
        r["rule_fixes_ok"] = all(f["ok"] for f in specific)
        r["verified"] = r["claim_ok"] and r["rule_fixes_ok"]
        r["passed"] = r["verified"] and r["line_ok"] and r["fixes_ok"] == len(fx_out)
        results.append(r)
    return results


def multi_gpu(out: Path, timeout: int) -> dict[str, Any]:
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / "multi_rank1_lingers_nccl_timeout.log"
    env = dict(os.environ)
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1",
               TORCH_NCCL_ASYNC_ERROR_HANDLING="1", PYTHONUNBUFFERED="1", LINGER="1")
    env.pop("TORCH_SHOW_CPP_STACKTRACES", None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(MULTI)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=timeout)
        rc, text = p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, text = 124, (e.stdout or b"").decode("utf-8", "replace")
    text = text.replace(str(MULTI.parent), "/workspace/tests/gpu/multi")
    log.write_text(f"+ torchrun --standalone --nproc-per-node 2 {MULTI.name}  (LINGER=1)\n{text}+ exit code {rc}\n",
                   encoding="utf-8")
    d = diagnose(log)
    d.pop("frames", None)
    root = re.search(r"Root Cause.*?rank\s*:\s*(\d+)", text, re.S)
    res = {"log": log.name, "rc": rc, "seconds": round(time.monotonic() - t0, 1),
           "watchdog_fired": "Watchdog caught collective operation timeout" in text,
           "torchrun_root_cause_rank": int(root.group(1)) if root else None, "diagnose": d}
    res["ok"] = d.get("rank") == 1 and d.get("rule") == "capture-item-sync"
    return res


def markdown(report: dict[str, Any]) -> str:
    e = report["environment"]
    lines = [
        "# Denpex closed loop on a GPU",
        "",
        f"- Date: {e.get('date')}",
        f"- GPU: {e.get('gpu')} x{e.get('gpu_count')} (capability {e.get('capability')}), driver {e.get('driver')}",
        f"- torch {e.get('torch')}, CUDA {e.get('cuda')}, cuDNN {e.get('cudnn')}, NCCL {e.get('nccl')}, Python {e.get('python')}",
        f"- Totals: {report['totals']}",
        "",
        "Legend: *claim* = the failure reproduces (or, for a silent rule, the result differs from eager), "
        "`denpex diagnose` names the rule and `denpex scan` flags it; *line* = the diagnosed frame line equals "
        "the scanned line; *verified* = claim and every rule-specific fix (all but the generic eager fallback) pass.",
        "",
        "| case | rule | claim | diagnose (rule @ line) | scan line | line | fixes ok | verified | notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report.get("cases", []):
        d = r["diagnose"]
        dcol = "n/a (silent)" if d.get("ok") is None else f"{d.get('rule')} @ {d.get('line')}"
        fixes = f"{r['fixes_ok']}/{len(r['fixes'])}"
        notes = "; ".join(r["reasons"] + [f"fix '{f['title']}': {f['reason']}" for f in r["fixes"] if not f["ok"]])
        lines.append(f"| {r['case']} | {r['rule']} | {'ok' if r['claim_ok'] else 'FAIL'} | {dcol} | "
                     f"{r['scan']['lines']} | {'ok' if r['line_ok'] else 'differs'} | {fixes} | "
                     f"{'yes' if r['verified'] else 'NO'} | {notes.replace('|', '/')} |")
    if report.get("not_observable"):
        lines += ["", "Source rules without a GPU case:", ""]
        lines += [f"- {k}: {v}" for k, v in report["not_observable"].items()]
    m = report.get("multi")
    if m:
        d = m["diagnose"]
        lines += ["", "## Two GPUs: rank 1 fails in capture and lingers, rank 0 hits the NCCL watchdog", "",
                  f"- exit {m['rc']} after {m['seconds']} s; watchdog fired: {m['watchdog_fired']}; "
                  f"torchrun Root Cause rank: {m['torchrun_root_cause_rank']}",
                  f"- denpex: {d.get('rule')} on rank {d.get('rank')}: {d.get('summary')}",
                  f"- {'PASS' if m['ok'] else 'FAIL'}: Denpex names rank 1 and the capture error"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or str(HERE / "results" / "local"))
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--only", default="", help="comma-separated rule ids or case names")
    ap.add_argument("--multi", action="store_true", help="also run the two-GPU torchrun case")
    ap.add_argument("--multi-only", action="store_true", help="run only the two-GPU torchrun case")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    report: dict[str, Any] = {"schema": "denpex.gpu-loop/1", "environment": versions()}
    if not a.multi_only:
        cases = single_gpu(out, a.jobs, a.timeout, {s for s in a.only.split(",") if s})
        report["cases"] = cases
        report["not_observable"] = NOT_OBSERVABLE
        rules = sorted({c["rule"] for c in cases})
        def every(r: str, key: str) -> bool:
            return all(c[key] for c in cases if c["rule"] == r)

        report["rules"] = {r: {"claim_ok": every(r, "claim_ok"), "line_ok": every(r, "line_ok"),
                               "rule_fixes_ok": every(r, "rule_fixes_ok"), "verified": every(r, "verified"),
                               "passed": every(r, "passed"),
                               "cases": [c["case"] for c in cases if c["rule"] == r]} for r in rules}
        report["totals"] = {"cases": len(cases), "rules": len(rules),
                            "rules_claim_ok": sum(v["claim_ok"] for v in report["rules"].values()),
                            "rules_line_ok": sum(v["line_ok"] for v in report["rules"].values()),
                            "rules_verified": sum(v["verified"] for v in report["rules"].values()),
                            "rules_passed_everything": sum(v["passed"] for v in report["rules"].values()),
                            "fixes": sum(len(c["fixes"]) for c in cases),
                            "fixes_ok": sum(c["fixes_ok"] for c in cases),
                            "rule_specific_fixes": sum(1 for c in cases for f in c["fixes"] if f["title"] != EAGER_FALLBACK),
                            "rule_specific_fixes_ok": sum(1 for c in cases for f in c["fixes"]
                                                          if f["title"] != EAGER_FALLBACK and f["ok"])}
    else:
        report["totals"] = {}
    if a.multi or a.multi_only:
        report["multi"] = multi_gpu(out, 300)
    report["seconds"] = round(time.monotonic() - t0, 1)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))
    ok = all(c["passed"] for c in report.get("cases", []))
    return 0 if ok and report.get("multi", {"ok": True})["ok"] else 1


if __name__ == "__main__":
    if shutil.which("nvidia-smi") is None:
        print("closed_loop: no nvidia-smi on PATH; this needs an NVIDIA GPU", file=sys.stderr)
    sys.exit(main())
