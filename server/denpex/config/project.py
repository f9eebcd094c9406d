"""`[tool.denpex]` for `denpex scan`: the nearest pyproject.toml read strictly into a ScanConfig, and the
command line's `--select` / `--ignore` on top of it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from denpex.config.keys import ValueProblem
from denpex.config.pyproject import find_pyproject, read_layer
from denpex.config.resolve import Resolved, resolve, rule_ids
from denpex.errors import DenpexError
from denpex.rulebook import RuleBook
from denpex.source.config import ScanConfig


def resolve_rules(book: RuleBook, keys: Iterable[str], origin: str = "") -> set[str]:
    """Rule ids for ids, codes or code prefixes (`DPX1`, `ALL`), comma-separated or not."""
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


def with_cli(config: ScanConfig, book: RuleBook, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> ScanConfig:
    """`config` narrowed by `--select` (replaces the selection) and `--ignore` (adds to it)."""
    sel = list(select)
    ign = list(ignore)
    out = config
    if sel:
        out = replace(out, select=frozenset(resolve_rules(book, sel, "--select")))
    if ign:
        out = replace(out, ignore=out.ignore | frozenset(resolve_rules(book, ign, "--ignore")))
    if out.select is not None and not out.select - out.ignore:
        raise DenpexError("--select/--ignore: no rule is left to report")
    return out


def load_project(book: RuleBook, start: Path | None = None, pyproject: Path | None = None) -> Resolved:
    """`[tool.denpex]` (of `pyproject`, else the nearest pyproject.toml above `start`) resolved strictly:
    a problem is a DenpexError with the text the language server reports for it too."""
    path = pyproject or (find_pyproject(start) if start is not None else None)
    layer = read_layer(path) if path is not None else None
    return resolve([layer] if layer is not None else [], book, strict=True)


def load_config(book: RuleBook, start: Path | None = None, pyproject: Path | None = None) -> ScanConfig:
    return load_project(book, start, pyproject).scan
