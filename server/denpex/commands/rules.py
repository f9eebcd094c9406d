"""`denpex rules`: list the rule book."""

from __future__ import annotations

import argparse
import json
from typing import Any

from denpex.rulebook import load_rulebook


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "rules", help="list the rules", description="List every rule in the rule book."
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    p.add_argument("--rules", action="append", default=[], metavar="DIR",
                   help="also load the rule files in DIR (repeatable)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    book = load_rulebook(args.rules)
    if args.format == "json":
        out = [
            {
                "id": r.id, "code": r.code, "title": r.title, "family": r.family,
                "severity": r.severity, "log": r.has_log_side,
                "source": r.source is not None, "path": r.path,
            }
            for r in book.rules
        ]
        print(json.dumps({"schema": "denpex.rules/1", "rules": out}, indent=2))
        return 0
    for r in sorted(book.rules, key=lambda r: r.code):
        sides = "+".join(s for s, on in (("log", r.has_log_side), ("source", r.source)) if on)
        print(f"{r.code}  {r.id:<44} {r.severity:<7} {sides or 'refine':<10} {r.title}")
    return 0
