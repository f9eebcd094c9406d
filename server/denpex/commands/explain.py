"""`denpex explain RULE`: everything the rule book knows about one failure mode."""

from __future__ import annotations

import argparse
import json
from typing import Any

from denpex.errors import DenpexError
from denpex.rulebook import load_rulebook
from denpex.rulebook.render import rule_markdown


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "explain", help="explain one rule",
        description="Show a rule's cause, fix, eager fallback, verification, checklist and signatures.",
    )
    p.add_argument("rule", metavar="RULE", help="rule id or code (e.g. capture-item-sync or DPX101)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--rules", action="append", default=[], metavar="DIR")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    book = load_rulebook(args.rules)
    rule = book.get(args.rule)
    if rule is None:
        raise DenpexError(f"unknown rule {args.rule!r} (see `denpex rules`)")
    if args.format == "json":
        print(json.dumps({
            "id": rule.id, "code": rule.code, "title": rule.title, "family": rule.family,
            "severity": rule.severity, "root_cause": rule.root_cause, "fix": rule.fix,
            "eager_fallback": rule.eager_fallback, "verify": rule.verify_command(),
            "checklist": list(rule.checklist), "references": list(rule.references),
            "signatures": [{"role": s.role, "literal": s.literal, "regex": s.regex} for s in rule.signatures],
            "verified_on": list(rule.verified_on), "path": rule.path,
        }, indent=2))
    else:
        print(rule_markdown(rule))
    return 0
