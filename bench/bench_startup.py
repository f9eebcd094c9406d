"""Start-up of `denpex diagnose FILE --format json` on a small log: wall time of whole runs, two trees alternating.

    python bench/bench_startup.py                                   # this checkout, tests/data's small log
    python bench/bench_startup.py --baseline /tmp/base --runs 10    # against an older tree, same runs
    python bench/bench_startup.py --bytecode cache FILE             # with cached bytecode, as an installed wheel

Each run is a fresh process (``PYTHONPATH=TREE/server python -m denpex diagnose FILE --format json``), after
one untimed run per tree; the trees alternate run by run so that a change of load hits both. rg's run
(``rg -n -i 'error|exception|timeout|failed' FILE``) is timed in the same loop when rg is on PATH.

``--bytecode``: ``as-is`` keeps the environment (where PYTHONDONTWRITEBYTECODE is set every run compiles
denpex's modules from source, about 50 ms); ``cache`` unsets it and caches bytecode under a scratch
PYTHONPYCACHEPREFIX, as an installed wheel (whose .pyc files pip writes) starts. The load average
(/proc/loadavg) is read before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SMALL = REPO / "tests" / "data" / "fresh40" / "02_vllm_watchdog_ima_rank0.log"
PEER = ["-n", "-i", "error|exception|timeout|failed"]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def once(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", type=Path, default=SMALL)
    ap.add_argument("--tree", type=Path, default=REPO, help="the tree measured (default: this checkout)")
    ap.add_argument("--baseline", type=Path, default=None, help="a second tree, timed in the same loop")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--bytecode", choices=("as-is", "cache"), default="as-is")
    args = ap.parse_args()
    base_env = dict(os.environ)
    base_env.pop("DENPEX_CACHE_DIR", None)
    scratch = tempfile.mkdtemp(prefix="denpex-pyc-")
    if args.bytecode == "cache":
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
        base_env["PYTHONPYCACHEPREFIX"] = scratch
    cmds: dict[str, tuple[list[str], dict[str, str]]] = {}
    trees = {"tree": args.tree} | ({"baseline": args.baseline} if args.baseline else {})
    for name, tree in trees.items():
        env = dict(base_env, PYTHONPATH=str(tree / "server"))
        if args.bytecode == "cache":  # one prefix per tree: the two trees' files have different paths anyway
            env["PYTHONPYCACHEPREFIX"] = str(Path(scratch) / name)
        cmds[name] = ([sys.executable, "-m", "denpex", "diagnose", str(args.file), "--format", "json"], env)
    rg = shutil.which("rg")
    if rg:
        cmds["rg"] = ([rg, *PEER, str(args.file)], base_env)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    before = load()
    try:
        for cmd, env in cmds.values():
            once(cmd, env)  # untimed: the page cache, and the bytecode cache where asked
        for _ in range(args.runs):
            for name, (cmd, env) in cmds.items():
                times[name].append(once(cmd, env))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = {
        "file": str(args.file), "runs": args.runs, "bytecode": args.bytecode,
        "load_before": before, "load_after": load(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        **{k: {"median_s": round(statistics.median(v), 4), "min_s": round(min(v), 4),
               "tree": str(trees[k]) if k in trees else None} for k, v in times.items()},
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
