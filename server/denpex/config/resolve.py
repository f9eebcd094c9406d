"""One resolver for `denpex scan` and the language server: layers of raw settings (the editor's
global and per-folder settings, `[tool.denpex]`), later layers winning key by key, become one
`Resolved`: the analyser's ScanConfig, the severities by rule id, and every option's value.

`denpex scan` resolves strictly (the first problem is a `ConfigError`: one line, exit 2). The language
server resolves leniently: a bad value is reported with the same text and the lower layer's value (or
the default) is used, so the server keeps serving.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from denpex.config.keys import (
    KEYS,
    Key,
    RuleSeverity,
    Value,
    ValueProblem,
    client_only,
    coerce,
    lookup,
)
from denpex.errors import DenpexError
from denpex.rulebook import RuleBook
from denpex.source.config import ScanConfig
from denpex.source.model import Severity


class ConfigError(DenpexError):
    """A configuration problem; the message names where it is and which key."""


@dataclass(frozen=True)
class Layer:
    origin: str
    """Where the values come from, as messages name it: `…/pyproject.toml: [tool.denpex]`, `editor settings`."""
    values: Mapping[str, object]
    project: bool = False
    """A `[tool.denpex]` table: only the keys marked `project` are allowed."""


@dataclass(frozen=True)
class Resolved:
    scan: ScanConfig = field(default_factory=ScanConfig)
    severity: Mapping[str, RuleSeverity] = field(default_factory=dict)
    """Rule id -> severity the configuration asks for (hint and off included; the analyser sees
    error/warning/info, hint as info, off as ignored)."""
    options: Mapping[str, Value] = field(default_factory=dict)
    """Field name -> effective value, for every key."""
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    """Unknown keys in editor settings: editors may send more than the server reads (not an error)."""

    def bool(self, name: str) -> bool:
        return bool(self.options[name])

    def int(self, name: str) -> int:
        v = self.options[name]
        return v if isinstance(v, int) else 0


def _flatten(values: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """`{"codeAction": {"fixViolation": {"enable": false}}}` -> `{"codeAction.fixViolation.enable": false}`;
    the severity table stays a table."""
    out: dict[str, object] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        known = lookup(name)
        if isinstance(value, Mapping) and (known is None or known.kind != "severity") and not client_only(name):
            out.update(_flatten(cast(Mapping[str, object], value), f"{name}."))
        else:
            out[name] = value
    return out


def _rank(key: str, book: RuleBook) -> tuple[int, int]:
    """Specificity of a rule selector: ALL < code prefixes (longer is more specific) < an exact id or code."""
    if key.upper() == "ALL":
        return (0, 0)
    return (2, 0) if book.get(key) is not None else (1, len(key))


def rule_ids(book: RuleBook, selector: str) -> set[str]:
    """Rule ids for one selector: an id, a code, a code prefix (`DPX1`) or `ALL`."""
    key = selector.strip()
    if key.upper() == "ALL":
        return {r.id for r in book.rules}
    rule = book.get(key)
    if rule is not None:
        return {rule.id}
    prefixed = {r.id for r in book.rules if r.code.upper().startswith(key.upper())}
    if key.upper().startswith("DPX") and prefixed:
        return prefixed
    raise ValueProblem(f"unknown rule {key!r} (see `denpex rules`)")


class _Resolver:
    def __init__(self, book: RuleBook, strict: bool) -> None:
        self.book = book
        self.strict = strict
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def problem(self, message: str) -> None:
        if self.strict:
            raise ConfigError(message)
        self.errors.append(message)

    def values(self, layers: Sequence[Layer]) -> dict[str, tuple[Value, str, str]]:
        """Field -> (value, origin, name as spelled) from the last layer that sets it validly."""
        chosen: dict[str, tuple[Value, str, str]] = {}
        for layer in layers:
            unknown: list[str] = []
            editor_only: list[str] = []
            for name, raw in _flatten(layer.values).items():
                key = lookup(name)
                if key is None or (layer.project and not key.project):
                    if layer.project or not client_only(name):
                        unknown.append(name)
                        if key is not None:
                            editor_only.append(name)
                    continue
                try:
                    value = coerce(key, raw)
                    if key.kind == "rules":
                        self.rules(cast(tuple[str, ...], value))
                    elif key.kind == "severity":
                        self.rules(tuple(cast(Mapping[str, RuleSeverity], value)))
                except ValueProblem as exc:
                    sep = ":" if key.kind in ("rules", "severity") and "unknown rule" in str(exc) else ""
                    self.problem(f"{layer.origin} {name}{sep} {exc}")
                    continue
                chosen[key.field] = (value, layer.origin, name)
            if unknown and layer.project:
                hint = f" ({', '.join(sorted(editor_only))}: editor settings only)" if editor_only else ""
                self.problem(f"{layer.origin} unknown key(s): {', '.join(sorted(unknown))}{hint}")
            elif unknown:
                self.warnings.append(f"{layer.origin} unknown key(s), ignored: {', '.join(sorted(unknown))}")
        return chosen

    def rules(self, selectors: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for s in selectors:
            out |= rule_ids(self.book, s)
        return out


def resolve(layers: Sequence[Layer], book: RuleBook, *, strict: bool) -> Resolved:
    """Layers (lowest first) -> Resolved. strict: raise ConfigError on the first problem."""
    r = _Resolver(book, strict)
    chosen = r.values(layers)
    options: dict[str, Value] = {k.field: chosen[k.field][0] if k.field in chosen else k.default for k in KEYS}
    select_keys = cast(tuple[str, ...], options["select"])
    select = r.rules(select_keys) if select_keys else None
    ignore = r.rules(cast(tuple[str, ...], options["ignore"]))
    severity: dict[str, RuleSeverity] = {}
    table = cast(Mapping[str, RuleSeverity], options["severity"])
    for sel in sorted(table, key=lambda s: _rank(s, book)):  # least specific first: exact keys win
        for rid in r.rules([sel]):
            severity[rid] = table[sel]
    ignore |= {rid for rid, sev in severity.items() if sev == "off"}
    enabled = (select if select is not None else {x.id for x in book.rules}) - ignore
    if not enabled:
        by_origin: dict[str, list[str]] = {}
        for f in ("select", "ignore", "severity"):
            if f in chosen:
                by_origin.setdefault(chosen[f][1], []).append(chosen[f][2])
        where = " and ".join(f"{o} {' and '.join(names)}" for o, names in by_origin.items())
        r.problem(f"{where}: no rule is left to report")
        select, ignore = None, set()  # lenient: report every rule rather than silently none
        severity = {rid: s for rid, s in severity.items() if s != "off"}
    scan = ScanConfig(
        select=frozenset(select) if select is not None else None,
        ignore=frozenset(ignore),
        severity=_analyser_severities(severity),
        capture_wrappers=frozenset(cast(tuple[str, ...], options["capture_wrappers"])),
        guards=frozenset(cast(tuple[str, ...], options["guards"])),
        max_depth=cast(int, options["max_depth"]),
        graphed_callables=frozenset(cast(tuple[str, ...], options["graphed_callables"])),
        capture_entry_points=frozenset(cast(tuple[str, ...], options["capture_entry_points"])),
    )
    return Resolved(scan, severity, options, tuple(r.errors), tuple(r.warnings))


def _analyser_severities(severity: Mapping[str, RuleSeverity]) -> dict[str, Severity]:
    out: dict[str, Severity] = {}
    for rid, s in severity.items():
        if s == "hint":
            out[rid] = "info"  # the analyser's levels; the editor still shows a hint
        elif s != "off":
            out[rid] = s
    return out


def project_keys() -> list[Key]:
    return [k for k in KEYS if k.project]
