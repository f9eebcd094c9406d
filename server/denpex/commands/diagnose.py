"""`denpex diagnose`: what failed first in a log or traceback, and what to do about it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from denpex.errors import DenpexError

if TYPE_CHECKING:
    from denpex.logs.diagnose import Diagnosis


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "diagnose",
        help="diagnose a log or traceback",
        description=(
            "Find the first CUDA-graph failure in a log, terminal output or traceback: the rule, "
            "the line, the rank/node/process, the cause, the fix and a verification command. "
            "Exit 0: nothing known found; 1: a failure was diagnosed; 2: bad usage or unreadable input."
        ),
    )
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="log file, a denpex bundle folder, or '-' for standard input (default)")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--context", type=int, default=100, metavar="N",
                   help="lines kept before the initiating line (default 100)")
    p.add_argument("--rules", action="append", default=[], metavar="DIR",
                   help="also load the rule files in DIR (repeatable)")
    p.add_argument("--control", metavar="GOOD",
                   help="a healthy run of the same job: report the first line before the failure it lacks")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # heavy imports here: `denpex --help` and other subcommands should not pay for them
    from denpex.logs.control import first_divergence
    from denpex.logs.diagnose import diagnose_path, diagnose_stream
    from denpex.rulebook import load_rulebook

    if args.context < 0:
        raise DenpexError("--context must be 0 or more")
    book = load_rulebook(args.rules) if args.rules else None
    show_progress = sys.stderr.isatty() and args.file != "-"
    progress = _progress_printer() if show_progress else None
    if args.file == "-":
        if args.control:
            raise DenpexError("--control needs the failing log as a file, not standard input")
        d = diagnose_stream(sys.stdin.buffer, book, args.context, "<stdin>")
    else:
        d = diagnose_path(args.file, book, args.context, progress)
    if show_progress:
        sys.stderr.write("\r\x1b[K")
    if args.control and d.verdict is not None:
        d.verdict.first_divergence = first_divergence(args.file, args.control, d.verdict.finding.line)
    _emit(d, args)
    return 1 if d.verdict is not None else 0


def _emit(d: Diagnosis, args: argparse.Namespace) -> None:
    from denpex.logs.render import render_json, render_markdown, render_text

    if args.format == "json":
        sys.stdout.write(render_json(d) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(d))
    else:
        colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
        sys.stdout.write(render_text(d, colour=colour))
    sys.stdout.flush()


def _progress_printer() -> Any:
    last = [0]

    def progress(done: int) -> None:
        if done - last[0] >= 64 << 20:
            last[0] = done
            sys.stderr.write(f"\rdenpex: scanned {done >> 20} MiB")
            sys.stderr.flush()

    return progress
