"""`[tool.denpex]` in pyproject.toml.

    [tool.denpex]
    select = ["DPX1", "replay-rebound-static-input"]   # ids, codes or code prefixes; default: all
    ignore = ["empty-cache-around-capture"]
    capture-wrappers = ["capture_to_graph", "mypkg.graphs.capture"]  # extra capture openers
    graphed-callables = ["mypkg.graphs.graphed"]      # extra calls that capture their first argument
    guards = ["is_graph_capturing"]                    # extra "am I capturing?" predicates
    max-depth = 4                                      # call-following depth
    [tool.denpex.severity]
    pinned-nonblocking-copy = "warning"
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from denpex.errors import DenpexError
from denpex.rulebook import RuleBook
from denpex.source.model import Severity

try:  # Python 3.11+
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - 3.10
    _toml = None  # type: ignore[assignment]


@dataclass(frozen=True)
class ScanConfig:
    select: frozenset[str] | None = None  # rule ids; None: every rule
    ignore: frozenset[str] = frozenset()
    severity: Mapping[str, Severity] = field(default_factory=dict)  # rule id -> severity
    capture_wrappers: frozenset[str] = frozenset()
    guards: frozenset[str] = frozenset()
    max_depth: int = 4
    graphed_callables: frozenset[str] = frozenset()

    def enabled(self, rule_id: str) -> bool:
        if rule_id in self.ignore:
            return False
        return self.select is None or rule_id in self.select

    def with_cli(self, book: RuleBook, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> ScanConfig:
        sel = list(select)
        ign = list(ignore)
        out = self
        if sel:
            out = replace(out, select=frozenset(resolve_rules(book, sel)))
        if ign:
            out = replace(out, ignore=out.ignore | frozenset(resolve_rules(book, ign)))
        return out


def resolve_rules(book: RuleBook, keys: Iterable[str]) -> set[str]:
    """Rule ids for ids, codes or code prefixes (`DPX1`, `ALL`)."""
    out: set[str] = set()
    for raw in keys:
        for key in (k.strip() for k in raw.split(",")):
            if not key:
                continue
            if key.upper() == "ALL":
                out |= {r.id for r in book.rules}
                continue
            rule = book.get(key)
            if rule is not None:
                out.add(rule.id)
                continue
            prefixed = {r.id for r in book.rules if r.code.upper().startswith(key.upper())}
            if key.upper().startswith("DPX") and prefixed:
                out |= prefixed
                continue
            raise DenpexError(f"unknown rule {key!r} (see `denpex rules`)")
    return out


def find_pyproject(start: Path) -> Path | None:
    p = start.resolve()
    if p.is_file():
        p = p.parent
    for d in (p, *p.parents):
        cand = d / "pyproject.toml"
        if cand.is_file():
            return cand
    return None


def _strings(value: Any, key: str, path: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DenpexError(f"{path}: [tool.denpex] {key} must be a list of strings")
    return cast(list[str], value)


def load_config(book: RuleBook, start: Path | None = None, pyproject: Path | None = None) -> ScanConfig:
    path = pyproject or (find_pyproject(start) if start is not None else None)
    if path is None or _toml is None:
        return ScanConfig()
    try:
        data = _toml.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, _toml.TOMLDecodeError) as exc:
        raise DenpexError(f"{path}: cannot read: {exc}") from None
    section = data.get("tool", {}).get("denpex")
    if section is None:
        return ScanConfig()
    if not isinstance(section, dict):
        raise DenpexError(f"{path}: [tool.denpex] must be a table")
    known = {"select", "ignore", "severity", "capture-wrappers", "capture_wrappers", "graphed-callables",
             "graphed_callables", "guards", "max-depth", "max_depth"}
    unknown = set(section) - known
    if unknown:
        raise DenpexError(f"{path}: [tool.denpex] unknown key(s): {', '.join(sorted(unknown))}")
    select = resolve_rules(book, _strings(section["select"], "select", path)) if "select" in section else None
    ignore = resolve_rules(book, _strings(section.get("ignore", []), "ignore", path))
    sev_raw = section.get("severity", {})
    if not isinstance(sev_raw, dict):
        raise DenpexError(f"{path}: [tool.denpex.severity] must be a table")
    severity: dict[str, Severity] = {}
    for key, value in sev_raw.items():
        if value not in ("error", "warning", "info"):
            raise DenpexError(f"{path}: [tool.denpex.severity] {key}: must be error, warning or info")
        for rid in resolve_rules(book, [key]):
            severity[rid] = cast(Severity, value)
    wrappers = _strings(section.get("capture-wrappers", section.get("capture_wrappers", [])), "capture-wrappers", path)
    graphed = _strings(section.get("graphed-callables", section.get("graphed_callables", [])), "graphed-callables", path)
    guards = _strings(section.get("guards", []), "guards", path)
    depth = section.get("max-depth", section.get("max_depth", 4))
    if not isinstance(depth, int) or depth < 0:
        raise DenpexError(f"{path}: [tool.denpex] max-depth must be a non-negative integer")
    return ScanConfig(frozenset(select) if select is not None else None, frozenset(ignore), severity, frozenset(wrappers),
                      frozenset(guards), depth, frozenset(graphed))
