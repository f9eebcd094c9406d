"""The analyser's configuration (ScanConfig) and `[tool.denpex]` for `denpex scan`.

    [tool.denpex]
    select = ["DPX1", "replay-rebound-static-input"]   # ids, codes or code prefixes; default: all
    ignore = ["empty-cache-around-capture"]
    capture-wrappers = ["capture_to_graph", "mypkg.graphs.capture"]  # extra capture openers
    graphed-callables = ["mypkg.graphs.graphed"]      # extra calls that capture their first argument
    capture-entry-points = ["mypkg.model:Net.forward"] # functions the project captures with no capture site here
    guards = ["is_graph_capturing"]                    # extra "am I capturing?" predicates
    max-depth = 4                                      # call-following depth
    unsafe-fixes = true                                # --fix applies unsafe fixes too
    [tool.denpex.severity]
    pinned-nonblocking-copy = "warning"

The keys, their checks and their error texts are `denpex.config`'s, shared with the language server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from denpex.errors import DenpexError
from denpex.rulebook import RuleBook
from denpex.source.model import Severity

if TYPE_CHECKING:
    from denpex.config.resolve import Resolved


@dataclass(frozen=True)
class ScanConfig:
    select: frozenset[str] | None = None  # rule ids; None: every rule
    ignore: frozenset[str] = frozenset()
    severity: Mapping[str, Severity] = field(default_factory=dict)  # rule id -> severity
    capture_wrappers: frozenset[str] = frozenset()
    guards: frozenset[str] = frozenset()
    max_depth: int = 4
    graphed_callables: frozenset[str] = frozenset()
    capture_entry_points: frozenset[str] = frozenset()  # "pkg.mod:Class.method": captured by the project's code

    def enabled(self, rule_id: str) -> bool:
        if rule_id in self.ignore:
            return False
        return self.select is None or rule_id in self.select

    def with_cli(self, book: RuleBook, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> ScanConfig:
        sel = list(select)
        ign = list(ignore)
        out = self
        if sel:
            out = replace(out, select=frozenset(resolve_rules(book, sel, "--select")))
        if ign:
            out = replace(out, ignore=out.ignore | frozenset(resolve_rules(book, ign, "--ignore")))
        if out.select is not None and not out.select - out.ignore:
            raise DenpexError("--select/--ignore: no rule is left to report")
        return out


def resolve_rules(book: RuleBook, keys: Iterable[str], origin: str = "") -> set[str]:
    """Rule ids for ids, codes or code prefixes (`DPX1`, `ALL`), comma-separated or not."""
    from denpex.config.keys import ValueProblem
    from denpex.config.resolve import rule_ids

    out: set[str] = set()
    for raw in keys:
        for key in (k.strip() for k in raw.split(",")):
            if not key:
                continue
            try:
                out |= rule_ids(book, key)
            except ValueProblem as exc:
                raise DenpexError(f"{origin}: {exc}" if origin else str(exc)) from None
    return out


def find_pyproject(start: Path) -> Path | None:
    from denpex.config.pyproject import find_pyproject as find

    return find(start)


def load_project(book: RuleBook, start: Path | None = None, pyproject: Path | None = None) -> Resolved:
    """`[tool.denpex]` (of `pyproject`, else the nearest pyproject.toml above `start`) resolved strictly:
    a problem is a DenpexError with the text the language server reports for it too."""
    from denpex.config.pyproject import read_layer
    from denpex.config.resolve import resolve

    path = pyproject or (find_pyproject(start) if start is not None else None)
    layer = read_layer(path) if path is not None else None
    return resolve([layer] if layer is not None else [], book, strict=True)


def load_config(book: RuleBook, start: Path | None = None, pyproject: Path | None = None) -> ScanConfig:
    return load_project(book, start, pyproject).scan
