"""`denpex run -- CMD`: run a job, pass its output through, diagnose it when it fails."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from denpex.errors import DenpexError

if TYPE_CHECKING:
    from denpex.logs.diagnose import Diagnosis
    from denpex.rulebook import RuleBook


# What makes asynchronous CUDA errors and NCCL hangs report at their cause (PyTorch's CUDA notes and
# its own error text "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"; TORCH_NCCL_* from
# torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp: the flight recorder keeps the last N collectives
# and dumps them when the watchdog times out).
HONEST_ENV: tuple[tuple[str, str], ...] = (
    ("CUDA_LAUNCH_BLOCKING", "1"),
    ("TORCH_SHOW_CPP_STACKTRACES", "1"),
    ("NCCL_DEBUG", "WARN"),
    ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1"),
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000"),
)


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run a command, diagnose it if it fails",
        description=(
            "Run CMD (e.g. torchrun ...), pass its output through unchanged, and when it fails print "
            "the diagnosis at the end and keep an evidence bundle (full output, nvidia-smi, "
            "collect_env, CUDA/NCCL/torch environment with secrets redacted). Exits with CMD's exit "
            "code; with --expect-absent, also fails when that rule's signature appears."
        ),
    )
    p.add_argument("--expect-absent", action="append", default=[], metavar="RULE",
                   help="the verification step: pass only when CMD succeeds and neither RULE, any rule it "
                        "is refined from, nor their signatures appear in its output")
    p.add_argument("--honest", action="store_true",
                   help="run CMD with the settings that make CUDA and NCCL report where an error happens: "
                        + ", ".join(f"{k}={v}" for k, v in HONEST_ENV))
    p.add_argument("--guard", nargs="?", const="refuse", metavar="MODE",
                   help="turn on the runtime CUDA-graph guard in every Python process of CMD (docs/guard.md): "
                        "refuse (default: a replay of freed or moved memory raises), warn, compare[:N]; "
                        "comma-separated, e.g. --guard=warn,compare:3")
    p.add_argument("--bundle-dir", metavar="DIR", help="where to put the bundle (default: current folder)")
    p.add_argument("--no-bundle", action="store_true", help="do not write an evidence bundle")
    p.add_argument("--rules", action="append", default=[], metavar="DIR",
                   help="also load the rule files in DIR (repeatable)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    p.set_defaults(handler=run)


def _pump(src: IO[bytes], dst: IO[bytes], log: IO[bytes], lock: threading.Lock) -> None:
    fd = src.fileno()
    while True:
        data = os.read(fd, 65536)
        if not data:
            break
        with lock:
            log.write(data)
        try:
            dst.write(data)
            dst.flush()
        except (BrokenPipeError, ValueError):
            pass


def run(args: argparse.Namespace) -> int:
    # heavy imports here: `denpex --help` and other subcommands should not pay for them
    from denpex.logs.bundle import new_bundle_dir, write_bundle
    from denpex.logs.diagnose_file import diagnose_path
    from denpex.logs.render import render_text
    from denpex.rulebook import load_rulebook

    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise DenpexError("nothing to run: use `denpex run -- CMD ARGS...`")
    book = load_rulebook(args.rules)
    expect = book.resolve(args.expect_absent)
    family = refined_from(book, expect)
    env = None
    if args.guard is not None:
        env = guard_env(args.guard)
    if args.honest:
        env = dict(env or os.environ)
        for key, value in HONEST_ENV:
            old = env.get(key)
            env[key] = value
            was = f" (was {old})" if old is not None and old != value else ""
            sys.stderr.write(f"denpex: --honest: {key}={value}{was}\n")
        sys.stderr.flush()
    tmp = tempfile.NamedTemporaryFile(prefix="denpex-run-", suffix=".log", delete=False)  # noqa: SIM115
    log_path = Path(tmp.name)
    lock = threading.Lock()
    started = time.time()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=None, env=env)
    except FileNotFoundError:
        tmp.close()
        log_path.unlink(missing_ok=True)
        raise DenpexError(f"{cmd[0]}: command not found") from None
    except OSError as exc:
        tmp.close()
        log_path.unlink(missing_ok=True)
        raise DenpexError(f"{cmd[0]}: cannot start: {exc.strerror or exc}") from None
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, sys.stdout.buffer, tmp, lock), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, sys.stderr.buffer, tmp, lock), daemon=True),
    ]
    for t in pumps:
        t.start()
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        rc = proc.wait()
    for t in pumps:
        t.join()
    tmp.close()
    try:
        d = diagnose_path(log_path, book)
        appeared = _appeared(d, family)
        failed = rc != 0 or bool(appeared)
        if failed:
            head = (f"the command failed (exit code {rc})" if rc != 0
                    else "the command exited 0, but a signature expected absent appeared")
            sys.stderr.write("\n" + "=" * 72 + f"\ndenpex: {head}\n")
            if d.verdict is not None or d.first_error is not None:
                # a known failure, or the first error line by its shape ("not a known CUDA-graph failure")
                sys.stderr.write(render_text(d, colour=sys.stderr.isatty()))
            else:
                sys.stderr.write("denpex: no known CUDA-graph failure signature in its output\n")
            for rule_id, line in appeared:
                where = f" (first at output line {line})" if line else ""
                what = "its signature" if rule_id in expect else f"{rule_id}, a rule it is refined from,"
                for asked in sorted(expect):
                    if rule_id == asked or rule_id in family.get(asked, set()):
                        sys.stderr.write(f"denpex: --expect-absent {asked}: {what} appeared{where}\n")
            if expect and not appeared:
                reason = (f"{d.verdict.rule.id} ({d.verdict.rule.title}) at output line {d.verdict.finding.line}"
                          if d.verdict is not None else "no known signature in its output")
                sys.stderr.write(
                    f"denpex: --expect-absent {', '.join(sorted(expect))}: not verified: the command failed "
                    f"for another reason (exit code {rc}): {reason}\n")
            if not args.no_bundle:
                folder = new_bundle_dir(args.bundle_dir)
                (folder / "output.log").write_bytes(b"")
                os.replace(log_path, folder / "output.log")
                write_bundle(folder, None, {
                    "command": shlex.join(cmd), "exit_code": rc,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
                    "seconds": round(time.time() - started, 3), "expect_absent": sorted(expect),
                    "signatures_appeared": sorted({r for r, _l in appeared}),
                }, d.to_json())
                sys.stderr.write(f"denpex: evidence kept in {folder} (`denpex diagnose {folder}`)\n")
        elif expect:
            parents = sorted({p for ps in family.values() for p in ps} - expect)
            also = f" (nor {', '.join(parents)}, which it is refined from)" if parents else ""
            sys.stderr.write(f"denpex: verified: the command succeeded and {', '.join(sorted(expect))}{also} "
                             "did not appear in its output\n")
    finally:
        log_path.unlink(missing_ok=True)
    if appeared and rc == 0:
        return 1
    return rc if rc >= 0 else 128 - rc


def guard_env(mode: str) -> dict[str, str]:
    """The environment that loads denpex.guard into every Python process of the job: its startup hook
    first on PYTHONPATH, the mode in DENPEX_GUARD."""
    from denpex.guard import parse_mode

    try:
        parse_mode(mode)
    except ValueError as exc:
        raise DenpexError(f"--guard: {exc}") from None
    hook = Path(__file__).resolve().parent.parent / "guard" / "hook"
    env = dict(os.environ)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(hook) + (os.pathsep + old if old else "")
    env["DENPEX_GUARD"] = mode
    env["DENPEX_GUARD_MAIN"] = str(os.getpid())
    return env


def refined_from(book: RuleBook, rules: set[str]) -> dict[str, set[str]]:
    """Each rule with the rules it is refined from (log.refine.parents), transitively."""
    out: dict[str, set[str]] = {}
    for rid in rules:
        seen: set[str] = set()
        todo = [rid]
        while todo:
            rule = book.get(todo.pop())
            if rule is None:
                continue
            for parent in rule.refine_parents:
                if parent not in seen and parent != rid:
                    seen.add(parent)
                    todo.append(parent)
        out[rid] = seen
    return out


def _appeared(d: Diagnosis, family: dict[str, set[str]]) -> list[tuple[str, int | None]]:
    """(rule, first output line) of each expected-absent rule, or rule it is refined from, seen."""
    watched = {r for rid, parents in family.items() for r in (rid, *parents)}
    lines: dict[str, int] = {}
    for f in d.findings:
        if f.rule in watched:
            lines[f.rule] = min(f.line, lines.get(f.rule, f.line))
    v = d.verdict
    if v is not None:
        for rid in (v.rule.id, v.via):
            if rid in watched:
                lines[rid] = min(v.finding.line, lines.get(rid, v.finding.line))
    return sorted(lines.items(), key=lambda kv: (kv[1], kv[0]))
