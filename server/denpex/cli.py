"""The `denpex` command line: one module per subcommand under denpex.commands."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from denpex import __version__
from denpex.errors import DenpexError

# (subcommand, module under denpex.commands); each module has register(subparsers) and run(args)
SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("diagnose", "diagnose"),
    ("merge", "merge"),
    ("scan", "scan"),
    ("run", "run"),
    ("collect", "collect"),
    ("rules", "rules"),
    ("explain", "explain"),
    ("serve", "serve"),
)


def _chosen(argv: Sequence[str] | None) -> str | None:
    """The subcommand named on the command line, if any (the first word that is not an option)."""
    words = list(sys.argv[1:] if argv is None else argv)
    names = {name for name, _m in SUBCOMMANDS}
    for word in words:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in names else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="denpex",
        description=(
            "Diagnose CUDA-graph failures locally: logs and tracebacks (diagnose, run, collect) "
            "and Python source (scan, serve). Nothing leaves the machine."
        ),
    )
    parser.add_argument("--version", action="version", version=f"denpex {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen(argv)
    for name, module_name in SUBCOMMANDS:
        if chosen is not None and name != chosen:
            # only the chosen subcommand's module is imported: each pulls in its own engine
            subparsers.add_parser(name, add_help=False)
            continue
        try:
            module = importlib.import_module(f"denpex.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"denpex.commands.{module_name}":
                continue  # subcommand not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.handler(args))
    except DenpexError as exc:
        print(f"denpex: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("denpex: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `denpex diagnose big.log | head` closes stdout early; that is not an error
        return 0


# One-shot commands that end holding only stdout run without the cycle collector and leave without
# tearing the interpreter down. Their objects live until the exit and make few cycles: the collector
# only re-walked a thousand files' summaries (3% of a folder's run; forked workers inherit it off),
# and freeing every object cost 8-10 ms of a 0.4 s run of a 1 GiB log (mypy's hard_exit does the
# same). Other commands, and callers of main() in-process, run and exit normally.
_ONE_SHOT = frozenset({"diagnose", "merge"})


def console() -> None:
    """The `denpex` command (console script and `python -m denpex`)."""
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command in _ONE_SHOT:
        gc.disable()
        from denpex import startcode

        startcode.install()  # the dataclasses' generated methods, compiled once (denpex.startcode)
    code = main()
    if command in _ONE_SHOT:
        startcode.save()
    if command not in _ONE_SHOT:
        raise SystemExit(code)  # `serve` and the rest: a normal exit (the server closes its streams)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `denpex diagnose big.log | head`
        os._exit(code)
    except (OSError, ValueError):  # a stream closed or failing: let the normal exit report it
        raise SystemExit(code) from None
    os._exit(code)


if __name__ == "__main__":
    console()
