"""`denpex diagnose` against the seeds' evidence grep on a 1 GiB log and a 1,000-file job folder.

    python bench/bench_evidence_grep.py --data-dir /tmp/denpex-bench     # 1 GiB each (needs ~2.2 GB)
    python bench/bench_evidence_grep.py --size-mb 128 --ranks 200        # a quick look
    python bench/bench_evidence_grep.py --baseline /tmp/old               # also time an older tree
    python bench/bench_evidence_grep.py --signatures                      # and ripgrep on denpex's literals
    python bench/bench_evidence_grep.py --shape benign-errors --shape no-failure --repeat 5

``--shape NAME`` (repeatable) times one 1 GiB file per log shape instead of the default log and folder:
``gen_log`` (bench/gen_log.py's log, a rule names its failure), ``benign-errors`` (a healthy run whose
lines are full of error words, bench/gen_shapes.py), ``benign-colour`` (the same in ANSI colour) and
``no-failure`` (gen_log's log cut before its failure); those without a verdict have their first-error
answer checked instead.

``--baseline DIR`` times a second copy of denpex in the same run (``DIR/server`` first on
PYTHONPATH, e.g. ``git archive HEAD~3 server rules | tar -x -C DIR``), to give before/after
figures next to the same peer runs; its verdict is checked like the current one's.

The peer is the grep a person runs first on a failed job (issue 12, section 6):
``rg -n -i 'error|exception|timeout|failed' PATH``. Both run as subprocesses in the same run,
alternating, best of N, after one untimed run each (page cache, .pyc files); denpex uses all the
usable cores (``--jobs`` default). Peak memory, every run: the largest single process (``ru_maxrss``
from os.wait4), the sum of each process's own peak (VmHWM) over the tree, and the largest anonymous
RSS; ripgrep's RSS is mostly the file it maps (see timed()). bench/bench_shapes.py times six log
shapes the same way. A wrong verdict voids the run. Figures go to
bench/out/evidence_grep.json; targets: denpex time <= the peer's, tree RSS <= 200 MB.
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
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_diagnose import _load, denpex_cmd, ensure_log, warm  # noqa: E402
from gen_folder import GENERATOR_VERSION as FOLDER_VERSION  # noqa: E402
from gen_folder import ExpectedFolder, generate  # noqa: E402
from gen_shapes import GENERATOR_VERSION as SHAPES_VERSION  # noqa: E402
from gen_shapes import ShapeExpected, benign_errors, no_failure  # noqa: E402

PEER = ["-n", "-i", "error|exception|timeout|failed"]
SHAPES = ("gen_log", "benign-errors", "benign-colour", "no-failure")
TARGET_RATIO = 1.0
TARGET_RSS_MB = 200.0


def timed(cmd: list[str], ok: tuple[int, ...], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run cmd; wall and CPU seconds, peak RSS, stdout (bench_shapes.timed's measurement).

    Peak RSS per process: the largest one (``maxrss_mb``: ru_maxrss from wait4, exact) and the sum of
    every process's own peak (``tree_mb``: VmHWM of each process of the tree, followed every 20 ms
    through /proc/PID/task/TID/children; an upper bound of the tree at any one time), and the largest
    anonymous RSS (``anon_mb``). ripgrep maps the file it reads: its RSS holds the mapped page cache
    (about the file's size, the 'GB' this column once showed against denpex's tens of MB), its
    anon_mb what it allocated. The old sampler walked all of /proc every 10 ms and took a good part
    of a core, so it ran in untimed runs only; this one reads a few files per process."""
    from bench_shapes import timed as shapes_timed

    with tempfile.NamedTemporaryFile() as out:
        r = shapes_timed(cmd, ok, out.name, env)
        stdout = Path(out.name).read_bytes()
    return {"wall": r["wall"], "cpu": r["cpu"], "maxrss_mb": r["peak_rss_mb"],
            "tree_mb": r["tree_rss_mb"], "anon_mb": r["anon_mb"], "stdout": stdout}


def compile_bytecode(baseline: Path | None) -> None:
    """Write the .pyc files of the trees timed, as pip does at install.

    Where PYTHONDONTWRITEBYTECODE is set (it is on the machines here), a tree never run with
    bytecode written compiles every module it imports on every run: tens of milliseconds a run
    that no installed copy pays."""
    import denpex

    trees = [Path(denpex.__file__).resolve().parent]
    if baseline is not None:
        trees.append(baseline / "server")
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True,
                       stdout=subprocess.DEVNULL)


def ensure_folder(root: Path, ranks: int, size_mb: float, seed: int) -> ExpectedFolder:
    meta = root.with_name(root.name + ".expected.json")
    if meta.exists():
        try:
            m = json.loads(meta.read_text())
            if m.get("generator_version") == FOLDER_VERSION and m.get("ranks") == ranks and \
                    abs(m.get("bytes", 0) - size_mb * (1 << 20)) < size_mb * (1 << 20) * 0.02:
                return ExpectedFolder(**m)
        except (ValueError, TypeError):
            pass
    if root.exists():
        shutil.rmtree(root)
    print(f"generating {root} ({ranks} ranks, {size_mb:g} MiB) ...", file=sys.stderr, flush=True)
    exp = generate(root, ranks, int(size_mb * (1 << 20)), seed)
    meta.write_text(json.dumps(asdict(exp), indent=1))
    return exp


def check(doc: dict[str, Any], rule: str, rank: int, line: int, file: str | None) -> list[str]:
    v = doc.get("verdict") or {}
    errs = []
    for key, want in (("rule", rule), ("rank", rank), ("line", line)):
        if v.get(key) != want:
            errs.append(f"{key} {v.get(key)!r} != {want!r}")
    if file is not None and v.get("file") != file:
        errs.append(f"file {v.get('file')!r} != {file!r}")
    return errs


def check_shape(doc: dict[str, Any], exp: ShapeExpected) -> list[str]:
    """A shape with no failure a rule knows: no verdict, and the first-error answer the generator expects."""
    errs = []
    v = doc.get("verdict")
    if (v or {}).get("rule") != exp.verdict:
        errs.append(f"verdict {(v or {}).get('rule')!r} != {exp.verdict!r}")
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


def ensure_shape(shape: str, size_mb: float, seed: int, data_dir: Path) -> ShapeExpected:
    """The shape's 1 GiB file in data_dir, generated once (reused while its generator and size match)."""
    path = data_dir / f"{shape}-{size_mb:g}mb-s{seed}.log"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        try:
            m = json.loads(meta.read_text())
            if m.get("generator_version") == SHAPES_VERSION and m.get("bytes") == path.stat().st_size:
                return ShapeExpected(**m)
        except (ValueError, TypeError):
            pass
    print(f"generating {path} ({shape}, {size_mb:g} MiB, seed {seed}) ...", file=sys.stderr, flush=True)
    if shape in ("benign-errors", "benign-colour"):
        exp = benign_errors(path, int(size_mb * (1 << 20)), seed, colour=shape == "benign-colour")
    else:
        src = ensure_log(size_mb, seed, data_dir)
        exp = no_failure(src.path, path, seed)
    meta.write_text(json.dumps(asdict(exp), indent=1))
    return exp


def _baseline_env(src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src / "server"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def duel(path: str, rg: str, repeat: int, rule: str, rank: int, line: int, file: str | None,
         baseline: Path | None = None, signatures: Path | None = None,
         checker: Any = None, baseline_runs: int | None = None) -> dict[str, Any]:
    """Best-of-repeat timings of ripgrep, denpex (and the baseline tree, in the first baseline_runs
    rounds), alternating in each round. checker(doc) -> errors replaces the rule/rank/line check."""
    def verdict_errors(doc: dict[str, Any]) -> list[str]:
        return checker(doc) if checker is not None else check(doc, rule, rank, line, file)

    peer = [rg, *PEER, path]
    sig = [rg, "-n", "-F", "-f", str(signatures), path] if signatures is not None else None
    dx = [*denpex_cmd(), "diagnose", path, "--format", "json"]
    old = [sys.executable, "-m", "denpex", "diagnose", path, "--format", "json"]
    old_env = _baseline_env(baseline) if baseline is not None else None
    mem = {"peer": timed(peer, (0, 1)), "denpex": timed(dx, (0, 1))}
    if old_env is not None and baseline_runs != 0:
        mem["before"] = timed(old, (0, 1), old_env)
    rows: dict[str, list[dict[str, Any]]] = {"peer": [], "denpex": []}
    if old_env is not None and baseline_runs != 0:
        rows["before"] = []
    if sig is not None:
        rows["signatures"] = []
    errors: list[str] = []
    doc: dict[str, Any] = {}
    for i in range(repeat):
        rows["peer"].append(timed(peer, (0, 1)))
        if sig is not None:
            rows["signatures"].append(timed(sig, (0, 1)))
        r = timed(dx, (0, 1))
        rows["denpex"].append(r)
        doc = json.loads(r["stdout"])
        errors = verdict_errors(doc)
        if old_env is not None and (baseline_runs is None or i < baseline_runs):
            rb = timed(old, (0, 1), old_env)
            rows["before"].append(rb)
            errors += [f"before: {e}" for e in verdict_errors(json.loads(rb["stdout"]))]
            if json.loads(rb["stdout"]) != doc:  # the document, not its layout (files one per line)
                errors.append("before and after print different reports")
        if errors:
            break
    best = {k: min(x["wall"] for x in v) for k, v in rows.items()}
    med = {k: statistics.median(x["wall"] for x in v) for k, v in rows.items()}
    v = doc.get("verdict") or {}
    out = {
        "path": path,
        "peer": {"cmd": peer, "runs_s": [round(x["wall"], 3) for x in rows["peer"]], "best_s": round(best["peer"], 3),
                 "cpu_s": round(min(x["cpu"] for x in rows["peer"]), 3),
                 "maxrss_mb": round(max(x["maxrss_mb"] for x in rows["peer"]), 1),
                 "anon_mb": round(max(x["anon_mb"] for x in rows["peer"]), 1),
                 "tree_mb": round(max(x["tree_mb"] for x in [mem["peer"], *rows["peer"]]), 1)},
        "denpex": {"cmd": dx, "runs_s": [round(x["wall"], 3) for x in rows["denpex"]],
                   "best_s": round(best["denpex"], 3), "cpu_s": round(min(x["cpu"] for x in rows["denpex"]), 3),
                   "maxrss_mb": round(max(x["maxrss_mb"] for x in rows["denpex"]), 1),
                   "anon_mb": round(max(x["anon_mb"] for x in rows["denpex"]), 1),
                   "tree_mb": round(max(x["tree_mb"] for x in [mem["denpex"], *rows["denpex"]]), 1),
                   "verdict": {k: v.get(k) for k in ("rule", "rank", "line", "file", "ordered_by")},
                   "first_error": ({k: fe.get(k) for k in ("found", "line", "kind", "text")}
                                   if (fe := doc.get("first_error")) is not None else None)},
        "ratio": round(best["denpex"] / best["peer"], 2),
        "median_ratio": round(med["denpex"] / med["peer"], 2),
        "errors": errors,
    }
    if "before" in rows:
        out["before"] = {"cmd": old, "src": str(baseline), "runs_s": [round(x["wall"], 3) for x in rows["before"]],
                         "best_s": round(best["before"], 3), "cpu_s": round(min(x["cpu"] for x in rows["before"]), 3),
                         "maxrss_mb": round(max(x["maxrss_mb"] for x in rows["before"]), 1),
                         "tree_mb": round(mem["before"]["tree_mb"], 1)}
        out["ratio_before"] = round(best["before"] / best["peer"], 2)
    if sig is not None:
        out["signatures"] = {"cmd": sig, "runs_s": [round(x["wall"], 3) for x in rows["signatures"]],
                             "best_s": round(best["signatures"], 3),
                             "maxrss_mb": round(max(x["maxrss_mb"] for x in rows["signatures"]), 1)}
    return out


def write_signatures(path: Path) -> Path:
    """The rule book's literal anchors, one a line, for `rg -F -f`: ripgrep doing denpex's search."""
    from denpex.logs.diagnose import matcher_for

    path.write_text("".join(a + "\n" for a in matcher_for(None).anchors), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1024.0, help="size of the log and of the folder (MiB)")
    ap.add_argument("--ranks", type=int, default=1000, help="per-rank files in the folder (default 1000)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rg", default=None)
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "denpex-bench")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "evidence_grep.json")
    ap.add_argument("--only", choices=("file", "folder"), default=None)
    ap.add_argument("--baseline", type=Path, default=None,
                    help="a source tree (with server/ and rules/) to time as 'before' in the same run")
    ap.add_argument("--signatures", action="store_true",
                    help="also time `rg -n -F -f` over denpex's own literal signatures (ripgrep doing denpex's search)")
    ap.add_argument("--shape", action="append", choices=SHAPES, default=None,
                    help="time this log shape (repeatable) instead of the default log and folder")
    ap.add_argument("--baseline-runs", type=int, default=None,
                    help="time the baseline in the first N rounds only (a slow tree; default: every round)")
    args = ap.parse_args(argv)
    rg = args.rg or shutil.which("rg")
    if not rg:
        raise SystemExit("ripgrep not found: apt-get install ripgrep, or pass --rg")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    compile_bytecode(args.baseline)
    load_before = _load()
    results: dict[str, Any] = {}
    sigs = write_signatures(args.data_dir / "signatures.txt") if args.signatures else None
    for shape in args.shape or []:
        if shape == "gen_log":
            exp = ensure_log(args.size_mb, args.seed, args.data_dir)
            warm(Path(exp.path))
            results[shape] = duel(exp.path, rg, args.repeat, exp.rule, exp.rank, exp.line, None, args.baseline,
                                  sigs, baseline_runs=args.baseline_runs)
            results[shape]["input"] = {"mib": round(exp.bytes / (1 << 20), 1), "lines": exp.lines,
                                       "ranks": exp.ranks}
            continue
        sexp = ensure_shape(shape, args.size_mb, args.seed, args.data_dir)
        warm(Path(sexp.path))
        results[shape] = duel(sexp.path, rg, args.repeat, "", 0, 0, None, args.baseline, sigs,
                              checker=lambda doc, e=sexp: check_shape(doc, e), baseline_runs=args.baseline_runs)
        results[shape]["input"] = {"mib": round(sexp.bytes / (1 << 20), 1), "lines": sexp.lines, "shape": shape}
    if not args.shape and args.only in (None, "file"):
        exp = ensure_log(args.size_mb, args.seed, args.data_dir)
        warm(Path(exp.path))
        results["file"] = duel(exp.path, rg, args.repeat, exp.rule, exp.rank, exp.line, None, args.baseline, sigs)
        results["file"]["input"] = {"mib": round(exp.bytes / (1 << 20), 1), "lines": exp.lines, "ranks": exp.ranks}
    if not args.shape and args.only in (None, "folder"):
        root = args.data_dir / f"job-{args.ranks}r-{args.size_mb:g}mb"
        fexp = ensure_folder(root, args.ranks, args.size_mb, args.seed)
        for f in sorted(root.rglob("*.log")):
            warm(f)
        results["folder"] = duel(str(root), rg, args.repeat, fexp.rule, fexp.rank, fexp.line, fexp.file,
                                 args.baseline, sigs)
        results["folder"]["input"] = {"mib": round(fexp.bytes / (1 << 20), 1), "files": fexp.files,
                                      "ranks": fexp.ranks}
    load_after = _load()
    ok = all(not r["errors"] for r in results.values())
    # whether the timed denpex used its native key search (a build without a C compiler, or
    # DENPEX_NATIVE=0, runs the crate's passes: slower, same answers)
    probe = subprocess.run([sys.executable, "-c", "from denpex.logs import native; print(native.available())"],
                           capture_output=True, text=True)
    native_search = probe.stdout.strip() == "True"
    doc = {
        "schema": "denpex.bench.evidence-grep/1",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), **load_before},
        "native_search": native_search,
        "load_after": load_after,
        "results": results,
        "valid": ok,
        "targets": {"ratio_max": TARGET_RATIO, "tree_rss_mb_max": TARGET_RSS_MB},
        "meets_targets": ok and all(r["ratio"] <= TARGET_RATIO and r["denpex"]["tree_mb"] <= TARGET_RSS_MB
                                    for r in results.values()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"load     before {load_before['loadavg']}  after {load_after['loadavg']}  ({load_before['cpus']} CPUs)"
          f"  native key search: {'yes' if native_search else 'no (the crate passes)'}")
    for name, r in results.items():
        print(f"{name:7} {r['input']}  first_error {r['denpex'].get('first_error')}")
        for who in ("peer", "signatures", "denpex", "before"):
            if who not in r:
                continue
            x = r[who]
            cpu = f"  cpu {x['cpu_s']:.2f} s" if "cpu_s" in x else ""
            print(f"  {who:7} best {x['best_s']:6.3f} s{cpu}  runs {x['runs_s']}  largest process RSS "
                  f"{x['maxrss_mb']:.0f} MB" + (f" (anon {x['anon_mb']:.0f} MB)" if 'anon_mb' in x else "")
                  + (f"  tree RSS {x['tree_mb']:.0f} MB" if 'tree_mb' in x else ""))
        print(f"  ratio   {r['ratio']:.2f}x the peer (best), {r['median_ratio']:.2f}x (median; target <= "
              f"{TARGET_RATIO:g})" + (f"  before: {r['ratio_before']:.2f}x" if "ratio_before" in r else "")
              + f"  verdict {r['denpex']['verdict']}")
        if r["errors"]:
            print("  VOID: " + "; ".join(r["errors"]))
    print(f"written  {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
