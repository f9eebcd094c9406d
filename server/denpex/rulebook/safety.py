"""Reject rule patterns that can backtrack catastrophically.

A static check over the pattern's syntax (via the stdlib parser, which understands the
subset rule files use) finds a repeated group whose body can itself repeat, and two
unbounded wildcards in a row; at run time every search also carries a timeout.
"""

from __future__ import annotations

try:  # Python 3.11+
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

import warnings
from typing import Any

_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
_UNBOUNDED = 4096


def _name(op: Any) -> str:
    return str(op).rsplit(".", 1)[-1]


def _has_unbounded_repeat(items: Any) -> bool:
    for op, av in items:
        name = _name(op)
        if name in _REPEATS:
            _lo, hi, sub = av
            if hi is sre_parse.MAXREPEAT or hi > _UNBOUNDED or _has_unbounded_repeat(sub):
                return True
        elif name == "SUBPATTERN":
            if _has_unbounded_repeat(av[-1]):
                return True
        elif name == "BRANCH" and any(_has_unbounded_repeat(b) for b in av[1]):
            return True
    return False


def _is_wild(op: Any, av: Any) -> bool:
    if _name(op) not in _REPEATS or (av[1] is not sre_parse.MAXREPEAT):
        return False
    sub = list(av[2])
    return len(sub) == 1 and _name(sub[0][0]) in ("ANY", "NOT_LITERAL", "IN")


def problems(pattern: str) -> list[str]:
    """Reasons the pattern is unsafe; empty when it is fine."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # FutureWarning on "[[" style sets is not ours to show
            parsed = sre_parse.parse(pattern)
    except Exception:
        return []
    out: list[str] = []

    def walk(items: Any) -> None:
        seq = list(items)
        for i, (op, av) in enumerate(seq):
            name = _name(op)
            if name in _REPEATS:
                _lo, hi, sub = av
                if (hi is sre_parse.MAXREPEAT or hi > 1) and _has_unbounded_repeat(sub):
                    out.append("nested quantifier: a repeated group whose body repeats without bound")
                walk(sub)
            elif name == "SUBPATTERN":
                walk(av[-1])
            elif name == "BRANCH":
                for b in av[1]:
                    walk(b)
            if i + 1 < len(seq) and _is_wild(op, av) and _is_wild(*seq[i + 1]):
                a, b = next(iter(av[2])), next(iter(seq[i + 1][1][2]))
                # \s*\w+ is harmless (disjoint classes); .*.* or \w*\w* splits a run in many ways
                if _name(a[0]) == "ANY" or _name(b[0]) == "ANY" or a == b:
                    out.append("two unbounded wildcards in a row")

    walk(parsed)
    return out
