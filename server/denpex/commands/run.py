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
                   help="fail if RULE's signature appears in the output (the verification step)")
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
    from denpex.logs.diagnose import diagnose_path
    from denpex.logs.render import render_text
    from denpex.rulebook import load_rulebook

    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise DenpexError("nothing to run: use `denpex run -- CMD ARGS...`")
    book = load_rulebook(args.rules)
    expect = book.resolve(args.expect_absent)
    tmp = tempfile.NamedTemporaryFile(prefix="denpex-run-", suffix=".log", delete=False)  # noqa: SIM115
    log_path = Path(tmp.name)
    lock = threading.Lock()
    started = time.time()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=None)
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
        found = _rules_seen(d)
        appeared = sorted(expect & found)
        failed = rc != 0 or bool(appeared)
        if failed:
            sys.stderr.write("\n" + "=" * 72 + f"\ndenpex: the command failed (exit code {rc})\n")
            if d.verdict is not None:
                sys.stderr.write(render_text(d, colour=sys.stderr.isatty()))
            else:
                sys.stderr.write("denpex: no known CUDA-graph failure signature in its output\n")
            for rule_id in appeared:
                lines = [f.line for f in d.findings if f.rule == rule_id]
                if d.verdict is not None and d.verdict.rule.id == rule_id:
                    lines.append(d.verdict.finding.line)
                line = min(lines, default=None)
                where = f" (first at output line {line})" if line else ""
                sys.stderr.write(f"denpex: --expect-absent {rule_id}: its signature appeared{where}\n")
            if not args.no_bundle:
                folder = new_bundle_dir(args.bundle_dir)
                (folder / "output.log").write_bytes(b"")
                os.replace(log_path, folder / "output.log")
                write_bundle(folder, None, {
                    "command": shlex.join(cmd), "exit_code": rc,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
                    "seconds": round(time.time() - started, 3), "expect_absent": sorted(expect),
                    "signatures_appeared": appeared,
                }, d.to_json())
                sys.stderr.write(f"denpex: evidence kept in {folder} (`denpex diagnose {folder}`)\n")
        elif expect:
            sys.stderr.write(f"denpex: verified: {', '.join(sorted(expect))} absent from the output\n")
    finally:
        log_path.unlink(missing_ok=True)
    if appeared and rc == 0:
        return 1
    return rc if rc >= 0 else 128 - rc


def _rules_seen(d: Diagnosis) -> set[str]:
    seen = {f.rule for f in d.findings}
    if d.verdict is not None:
        seen.add(d.verdict.rule.id)
    return seen
