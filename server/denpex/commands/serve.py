"""`denpex serve`: the language server (LSP over stdio; `--tcp PORT` for debugging)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="run the language server (LSP over stdio)",
        description=(
            "Run the Denpex language server: diagnostics, hovers and quick fixes for Python "
            "source, diagnosis of tracebacks and logs (command denpex.diagnose). Speaks LSP "
            "over stdin/stdout unless --tcp is given."
        ),
    )
    p.add_argument("--tcp", type=int, metavar="PORT", default=None,
                   help="listen on TCP PORT (127.0.0.1) instead of stdio, for debugging")
    p.add_argument("--host", default="127.0.0.1", help="address to bind with --tcp (default 127.0.0.1)")
    p.add_argument("--stdio", action="store_true", help="speak over stdio (the default; accepted for clients that pass it)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from denpex.lsp.app import (
        serve,  # over stdio, pygls is imported after the early start-up (lsp/boot.py)
    )

    return serve(tcp_port=args.tcp, host=args.host)
