"""Ecosystem check, as ruff's: scan real projects at pinned commits and diff the findings against a baseline.

    python bench/ecosystem/check.py                  # scan every project, write baseline.json
    python bench/ecosystem/check.py --only NeMo      # one project (merged into the existing baseline)
    python bench/ecosystem/check.py --diff           # fresh scan vs the committed baseline, ruff-style
    python bench/ecosystem/check.py --profile NAME   # per-capture-file times and the top of a cProfile

Each tree comes from a bare git dir (default /work/.mirror/OWNER+NAME/repo, or --mirrors DIR with the same
layout, or a `git clone --bare`) and is materialised with `git archive COMMIT | tar -x` into --cache (default
/tmp/denpex-eco), outside the repository. `denpex scan . --format json` runs at the tree's root as a child
process, timed by wall clock, with its peak RSS from wait4(); `ruff check --no-cache --isolated` runs on the
same tree in the same run as the peer. Projects run one after another so the two never share the CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.toml"
BASELINE = HERE / "baseline.json"
SCHEMA = "denpex.ecosystem/1"
VENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Project:
    name: str
    repo: str
    commit: str
    unavailable: str = ""


@dataclass
class Timed:
    wall_s: float
    cpu_s: float
    max_rss_mb: float
    rc: int | None  # None: killed at the timeout
    stdout: str
    stderr: str


def load_manifest(path: Path = MANIFEST) -> list[Project]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Project(p["name"], p["repo"], p.get("commit", ""), p.get("unavailable", "")) for p in data["project"]]


def mirror_dir(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


# what either tool reads: Python sources and notebooks, plus the files that decide which of them are read
WANTED_SUFFIXES = (".py", ".pyi", ".ipynb")
WANTED_NAMES = (".gitignore", "pyproject.toml")


def wanted_blobs(git_dir: Path, commit: str) -> list[tuple[str, str]]:
    """(blob id, path) of the files at commit that the tools read; links and submodules left out."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--full-tree", commit],
                         capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape")
    rows = []
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != "120000" and (path.endswith(WANTED_SUFFIXES)
                                                   or path.rsplit("/", 1)[-1] in WANTED_NAMES):
            rows.append((sha, path))
    return rows


def materialise(p: Project, mirrors: Path, cache: Path) -> Path:
    """The pinned tree's Python files under cache/NAME, reused when its stamp names the same commit.

    Blobs are read with `git cat-file --batch` rather than `git archive`: a fetched snapshot may lack its
    largest blobs (images, big notebooks), and one missing blob makes `git archive` give up on the tree. The
    paths whose blob is absent are listed in cache/NAME.missing."""
    root = cache / p.name
    stamp = cache / f"{p.name}.commit"
    if root.is_dir() and stamp.is_file() and stamp.read_text().strip() == p.commit:
        return root
    git_dir = mirror_dir(mirrors, p.repo)
    if not git_dir.exists():
        raise RuntimeError(f"no mirror at {git_dir} (fetch github:{p.repo} first)")
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    blobs = wanted_blobs(git_dir, p.commit)
    missing = []
    with subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE) as cat:
        assert cat.stdin is not None and cat.stdout is not None
        # one id at a time: the pipe never holds more than one answer, so neither side blocks
        for sha, path in blobs:
            cat.stdin.write(sha.encode() + b"\n")
            cat.stdin.flush()
            head = cat.stdout.readline().split()
            if len(head) < 3 or head[1] != b"blob":
                missing.append(path)
                continue
            data = cat.stdout.read(int(head[2]))
            cat.stdout.read(1)  # the newline after each object
            dest = root / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        cat.stdin.close()
    (cache / f"{p.name}.missing").write_text("".join(m + "\n" for m in missing), encoding="utf-8")
    stamp.write_text(p.commit + "\n")
    return root


TIME = Path("/usr/bin/time")


def run_timed(cmd: list[str], cwd: Path, timeout: float) -> Timed:
    """Run cmd, wall-clock timed, with its peak RSS and CPU time.

    Linux carries a process's peak RSS across fork and exec, so a child forked from this (large) process would
    report at least this process's size. The measured command therefore runs under /usr/bin/time, a small C
    parent whose own child starts small; without it, under a fresh Python that reports its child's wait4()."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as stats:
        if TIME.exists():
            wrapped = [str(TIME), "-o", stats.name, "-f", "%M %U %S", *cmd]
        else:
            wrapped = [sys.executable, "-c", _WAIT4_WRAPPER, stats.name, *cmd]
        t0 = time.monotonic()
        proc = subprocess.Popen(wrapped, cwd=cwd, stdout=out, stderr=err, start_new_session=True)
        rc: int | None = None
        seen_kb = 0  # polled, for a run killed at the timeout (the timer then writes nothing)
        while True:
            try:
                rc = proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                seen_kb = max(seen_kb, _tree_hwm_kb(proc.pid))
                if time.monotonic() - t0 > timeout:
                    os.killpg(proc.pid, signal.SIGKILL)  # its own session: the tool and the timer go together
                    proc.wait()
                    rc = None
                    break
        wall = time.monotonic() - t0
        fields = (stats.read().strip().splitlines() or [""])[-1].split()
        rss_kb, cpu = (float(fields[0]), float(fields[1]) + float(fields[2])) if len(fields) == 3 else (seen_kb, 0.0)
        out.seek(0)
        err.seek(0)
        return Timed(wall, cpu, rss_kb / 1024.0, rc, out.read().decode("utf-8", "replace"),
                     err.read().decode("utf-8", "replace"))


def _tree_hwm_kb(pid: int) -> int:
    """The largest VmHWM among pid's children (the measured tool under its timer), 0 where unreadable."""
    best = 0
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0
    for kid in kids:
        try:
            for line in Path(f"/proc/{kid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    best = max(best, int(line.split()[1]))
        except (OSError, ValueError):
            continue
    return best


# the fallback timer: runs argv[2:], writes "maxrss_kb user_s sys_s" to argv[1], exits with the child's status
_WAIT4_WRAPPER = (
    "import os,subprocess,sys\n"
    "p=subprocess.Popen(sys.argv[2:]);_,s,r=os.wait4(p.pid,0)\n"
    "open(sys.argv[1],'w').write(f'{r.ru_maxrss} {r.ru_utime} {r.ru_stime}\\n')\n"
    "sys.exit(os.waitstatus_to_exitcode(s))\n")


def count_tree(root: Path) -> tuple[int, int]:
    """Files and lines that `denpex scan .` reads: its own file walk (.gitignore respected)."""
    from denpex.commands.scan import collect_files
    here = os.getcwd()
    os.chdir(root)
    try:
        files = collect_files(["."])
    finally:
        os.chdir(here)
    lines = 0
    for f in files:
        try:
            with open(root / f, "rb") as fh:
                lines += sum(1 for _ in fh)
        except OSError:
            pass
    return len(files), lines


def message_hash(message: str) -> str:
    return hashlib.sha1(message.encode("utf-8")).hexdigest()[:12]


def norm_path(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def finding_rows(diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for d in diagnostics:
        site = d.get("capture_site") or {}
        rows.append({"path": norm_path(d["path"]), "line": d["line"], "column": d["column"], "rule": d["rule"],
                     "severity": d["severity"], "message_hash": message_hash(d["message"]),
                     "capture": f"{norm_path(site['path'])}:{site['line']}" if site else ""})
    rows.sort(key=lambda r: (r["path"], r["line"], r["column"], r["rule"]))
    return rows


def finding_key(r: dict[str, Any]) -> tuple[str, int, str, str, str]:
    return (r["path"], r["line"], r["rule"], r["severity"], r["message_hash"])


def ruff_version() -> str:
    ruff = str(VENV_BIN / "ruff") if (VENV_BIN / "ruff").exists() else "ruff"
    return subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip()


def denpex_commit() -> str:
    """The commit of the Denpex checkout that ran, '+dirty' when its server/ had changes: findings follow it.

    DENPEX_ECO_DENPEX_COMMIT names it instead when the scan runs a snapshot of server/ (PYTHONPATH) taken at that
    commit, so that other sessions' commits during a long run do not mix into it."""
    pinned = os.environ.get("DENPEX_ECO_DENPEX_COMMIT", "")
    if pinned:
        return pinned
    repo = HERE.parents[1]
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", "server"],
                           capture_output=True, text=True).stdout.strip()
    return head.strip() + ("+dirty" if dirty else "")


def denpex_version() -> str:
    from denpex import __version__
    return str(__version__)


def scan_project(p: Project, mirrors: Path, cache: Path, timeout: float, keep_output: bool = True) -> dict[str, Any]:
    root = materialise(p, mirrors, cache)
    files, lines = count_tree(root)
    denpex = str(VENV_BIN / "denpex") if (VENV_BIN / "denpex").exists() else "denpex"
    ruff = str(VENV_BIN / "ruff") if (VENV_BIN / "ruff").exists() else "ruff"
    load = os.getloadavg()[0]  # the machine is shared: a high load makes both tools slower, not their ratio
    d = run_timed([denpex, "scan", ".", "--format", "json"], root, timeout)
    r = run_timed([ruff, "check", "--no-cache", "--isolated", "--exit-zero", "-q", "."], root, timeout)
    missing = cache / f"{p.name}.missing"
    entry: dict[str, Any] = {
        "repo": p.repo, "commit": p.commit, "denpex_commit": denpex_commit(), "files": files, "lines": lines, "load1": round(load, 2),
        "absent_blobs": len(missing.read_text().splitlines()) if missing.is_file() else 0,
        "denpex": {"wall_s": round(d.wall_s, 2), "cpu_s": round(d.cpu_s, 2), "max_rss_mb": round(d.max_rss_mb, 1),
                   "rc": d.rc},
        "ruff": {"wall_s": round(r.wall_s, 2), "cpu_s": round(r.cpu_s, 2), "max_rss_mb": round(r.max_rss_mb, 1)},
    }
    if d.rc is None:
        entry.update(status="timeout", findings=[], note=f"denpex scan ran past {timeout:.0f} s and was killed")
        return entry
    try:
        doc = json.loads(d.stdout)
    except json.JSONDecodeError:
        entry.update(status="error", findings=[], note=(d.stderr.strip().splitlines() or ["no output"])[-1][:300])
        return entry
    if keep_output:  # the full messages, for review; outside the repository, next to the tree
        (cache / f"{p.name}.scan.json").write_text(d.stdout, encoding="utf-8")
    entry.update(status="ok" if d.rc in (0, 1) else f"exit {d.rc}", findings=finding_rows(doc["diagnostics"]))
    entry["ratio"] = round(d.wall_s / r.wall_s, 2) if r.wall_s > 0 else None
    # on a loaded machine the wall clock says more about the neighbours than the tools: CPU seconds too
    entry["cpu_ratio"] = round(d.cpu_s / r.cpu_s, 2) if r.cpu_s > 0 else None
    return entry


def severity_counts(findings: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        out[f["severity"]] = out.get(f["severity"], 0) + 1
    return out


def summary_line(name: str, e: dict[str, Any]) -> str:
    if "denpex" not in e:
        return f"{name:20} {e.get('status', '?')}: {e.get('note', '')}"
    c = severity_counts(e["findings"])
    sev = " ".join(f"{k}={c[k]}" for k in sorted(c)) or "no findings"
    dx, rf = e["denpex"], e["ruff"]
    return (f"{name:20} {e['files']:5} files {e['lines']:8} lines  denpex {dx['wall_s']:7.2f}s "
            f"{dx['max_rss_mb']:6.0f}MB  ruff {rf['wall_s']:5.2f}s  x{e.get('ratio') or 0:<6} cpu x{e.get('cpu_ratio') or 0:<6} "
            f"{e['status']:8} {sev}")


def load_baseline(path: Path) -> dict[str, Any]:
    if path.is_file():
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return doc
    return {"schema": SCHEMA, "projects": {}}


def diff_findings(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[list[dict[str, Any]],
                                                                                 list[dict[str, Any]]]:
    """Added and removed findings; a finding is the same when path, line, rule, severity and message agree."""
    ok, nk = {finding_key(f) for f in old}, {finding_key(f) for f in new}
    return [f for f in new if finding_key(f) not in ok], [f for f in old if finding_key(f) not in nk]


def show(f: dict[str, Any], messages: dict[tuple[str, int, str], str]) -> str:
    msg = messages.get((f["path"], f["line"], f["rule"]), f"message {f['message_hash']}")
    return f"{f['path']}:{f['line']}:{f['column']}: {f['rule']} [{f['severity']}] {msg}"


def messages_of(cache: Path, name: str) -> dict[tuple[str, int, str], str]:
    out: dict[tuple[str, int, str], str] = {}
    path = cache / f"{name}.scan.json"
    if path.is_file():
        for d in json.loads(path.read_text(encoding="utf-8"))["diagnostics"]:
            out[(norm_path(d["path"]), d["line"], d["rule"])] = d["message"]
    return out


def profile_child(root: str, top: int) -> None:
    """In-process scan of root with each capture file's region walk timed and a cProfile of the whole run.

    The walk of a file's capture regions (`_hits_for` in the analyser) is where a file's cost lands: the rest of
    the run is parsing and indexing. The hook is looked up by name and skipped when the module has moved."""
    import cProfile
    import importlib
    import pstats

    per_file: dict[str, float] = {}
    hooked = False
    for mod_name in ("denpex.source.engine.analyse", "denpex.source.analysis.analyse"):
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        inner = getattr(mod, "_hits_for", None)
        if inner is None:
            continue

        def timed_hits(ix: Any, *a: Any, _inner: Any = inner, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return _inner(ix, *a, **k)
            finally:
                key = str(getattr(ix, "path", "?"))
                per_file[key] = per_file.get(key, 0.0) + time.perf_counter() - t

        vars(mod)["_hits_for"] = timed_hits  # the module's global, looked up at each call
        hooked = True
        break
    from denpex.cli import main
    os.chdir(root)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    with open(os.devnull, "w") as null:
        saved, sys.stdout = sys.stdout, null
        try:
            prof.runcall(main, ["scan", ".", "--format", "json", "--jobs", "1"])  # one process: the hook and cProfile see it all
        except SystemExit:
            pass
        finally:
            sys.stdout = saved
    total = time.perf_counter() - t0
    slowest = sorted(per_file.items(), key=lambda kv: -kv[1])[:top]
    print(json.dumps({"total_s": round(total, 2), "hooked": hooked,
                      "per_file": [[k, round(v, 3)] for k, v in slowest]}))
    stats = pstats.Stats(prof, stream=sys.stderr)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def run_profile(p: Project, mirrors: Path, cache: Path, timeout: float, top: int) -> None:
    root = materialise(p, mirrors, cache)
    t = run_timed([sys.executable, __file__, "--profile-child", str(root), "--top", str(top)], root, timeout)
    if t.rc is None:
        print(f"{p.name}: profile ran past {timeout:.0f} s")
        return
    head = next((ln for ln in t.stdout.splitlines() if ln.startswith("{")), "")
    if head:
        doc = json.loads(head)
        print(f"{p.name}: {doc['total_s']} s under cProfile; region walk per capture file (slowest first):")
        for path, secs in doc["per_file"]:
            print(f"  {secs:8.3f} s  {path}")
    prof_path = cache / f"{p.name}.profile.txt"
    prof_path.write_text(t.stderr, encoding="utf-8")
    print(f"cProfile (cumulative, then tottime): {prof_path}")


VERDICTS = HERE / "verdicts.tsv"


def precision(rows: list[dict[str, str]], severity: str) -> tuple[int, int, int]:
    """(true, false, unclear) among the reviewed findings of one severity."""
    picked = [r["verdict"] for r in rows if r["severity"] == severity]
    return picked.count("true"), picked.count("false"), picked.count("unclear")


def table(base: dict[str, Any], verdicts_path: Path = VERDICTS) -> str:
    """The README's table, from the baseline and the reviewed verdicts."""
    import csv
    with open(verdicts_path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    head = ("| project | files | lines | errors | warnings | infos | error precision (true/reviewed) | warning "
            "precision | denpex s | ruff s | wall ratio | CPU ratio | peak RSS MB |")
    out = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for name, e in base["projects"].items():
        if "denpex" not in e:
            out.append(f"| {name} | {e.get('status')}: {e.get('note', '')} |" + " |" * 11)
            continue
        c = severity_counts(e["findings"])
        mine = [r for r in rows if r["project"] == name]
        cells = []
        for sev in ("error", "warning"):
            t, f, u = precision(mine, sev)
            n = t + f + u
            cells.append(f"{t}/{n}" + (f" ({u} unclear)" if u else "") if n else "–")
        dx, rf = e["denpex"], e["ruff"]
        timed_out = e["status"] == "timeout"
        out.append(f"| {name} | {e['files']} | {e['lines']} | {c.get('error', 0)} | {c.get('warning', 0)} | "
                   f"{c.get('info', 0)} | {cells[0]} | {cells[1]} | {'>' if timed_out else ''}{dx['wall_s']:.1f} | "
                   f"{rf['wall_s']:.1f} | {'>' if timed_out else ''}{e.get('ratio') or dx['wall_s'] / rf['wall_s']:.1f}x"
                   f" | {e.get('cpu_ratio') or 0:.1f}x | {'>' if timed_out else ''}{dx['max_rss_mb']:.0f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--baseline", type=Path, default=BASELINE)
    ap.add_argument("--mirrors", type=Path, default=Path(os.environ.get("DENPEX_ECO_MIRRORS", "/work/.mirror")),
                    help="folder of bare git dirs, OWNER+NAME/repo (default /work/.mirror)")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("DENPEX_ECO_CACHE", "/tmp/denpex-eco")),
                    help="where the pinned trees are materialised (outside the repository)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="only this project (repeatable)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per project and tool (default 600)")
    ap.add_argument("--diff", action="store_true", help="compare a fresh scan with the baseline; write nothing")
    ap.add_argument("--profile", metavar="NAME", help="per-capture-file times and a cProfile of one project")
    ap.add_argument("--table", action="store_true", help="print the README table from baseline and verdicts")
    ap.add_argument("--top", type=int, default=15, help=argparse.SUPPRESS)
    ap.add_argument("--profile-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.profile_child:
        profile_child(args.profile_child, args.top)
        return 0
    if args.table:
        print(table(load_baseline(args.baseline)), end="")
        return 0
    projects = load_manifest(args.manifest)
    known = {p.name for p in projects}
    for n in args.only + ([args.profile] if args.profile else []):
        if n not in known:
            ap.error(f"no project {n!r} in {args.manifest} (known: {', '.join(sorted(known))})")
    if args.profile:
        run_profile(next(p for p in projects if p.name == args.profile), args.mirrors, args.cache, args.timeout,
                    args.top)
        return 0
    chosen = [p for p in projects if not args.only or p.name in args.only]
    args.cache.mkdir(parents=True, exist_ok=True)
    base = load_baseline(args.baseline)
    changed = 0
    fresh: dict[str, Any] = {}
    for p in chosen:
        if p.unavailable:
            fresh[p.name] = {"repo": p.repo, "status": "unavailable", "note": p.unavailable}
            print(summary_line(p.name, fresh[p.name]), flush=True)
            continue
        try:
            entry = scan_project(p, args.mirrors, args.cache, args.timeout)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            entry = {"repo": p.repo, "commit": p.commit, "status": "missing", "note": str(exc)}
        fresh[p.name] = entry
        print(summary_line(p.name, entry), flush=True)
        if not args.diff or "findings" not in entry:
            continue
        old = base["projects"].get(p.name, {})
        if old.get("commit") not in (None, p.commit):
            print(f"  baseline is of commit {old.get('commit')}, not {p.commit}: every finding may move")
        if old.get("denpex_commit") and old["denpex_commit"] != entry["denpex_commit"]:
            print(f"  denpex {old['denpex_commit'][:12]} (baseline) -> {entry['denpex_commit'][:12]} (now)")
        added, removed = diff_findings(old.get("findings", []), entry["findings"])
        msgs = messages_of(args.cache, p.name)
        for f in added:
            print(f"  + {show(f, msgs)}")
        for f in removed:
            print(f"  - {show(f, {})}")
        if added or removed:
            changed += 1
            print(f"  {p.name}: +{len(added)} -{len(removed)} findings")
    if args.diff:
        print(f"{changed} of {len(chosen)} projects changed" if changed else "no changes against the baseline")
        return 1 if changed else 0
    base["schema"] = SCHEMA
    base["denpex_version"] = denpex_version()
    base["ruff_version"] = ruff_version()
    base["ruff_command"] = "ruff check --no-cache --isolated --exit-zero -q ."
    base["denpex_command"] = "denpex scan . --format json"
    base["cpus"] = os.cpu_count()
    base["projects"].update(fresh)
    base["projects"] = {p.name: base["projects"][p.name] for p in projects if p.name in base["projects"]}
    args.baseline.write_text(json.dumps(base, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {args.baseline}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
