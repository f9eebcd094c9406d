"""The source rules: one module per rule (`capture_item_sync.py` for `capture-item-sync`), each defining
`RULE = SourceRule(...)` (see `_api.py`). Modules whose name starts with `_` hold what several rules share.

`registry()` imports every rule module once and checks it: a hazard declared by two rules, a rule module without
its rule in the rule book, or a rule book entry whose `source.hazards` differ from its module's fails loudly
(`RegistryError`). `rule_set(enabled)` gives the dispatch tables of the enabled rules only.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache

from denpex.errors import DenpexError
from denpex.rulebook import RuleBook
from denpex.source.rules._api import (
    NODE_TYPES,
    Around,
    CallHook,
    Claim,
    ConditionHook,
    Hazard,
    NodeHook,
    SourceRule,
)


class RegistryError(DenpexError):
    """A source rule module disagrees with another or with the rule book."""


@dataclass(frozen=True)
class Registry:
    rules: Mapping[str, SourceRule]  # rule id -> rule, in module-name order
    hazards: Mapping[str, Hazard]  # hazard id -> its declaration
    owner: Mapping[str, str]  # hazard id -> rule id


@cache
def registry() -> Registry:
    """Every rule module of this package, imported once and checked (see `build`)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return build((name, importlib.import_module(f"{__name__}.{name}")) for name in names)


def build(modules: Iterable[tuple[str, object]]) -> Registry:
    """A registry of (module name, module) pairs; RegistryError on a module without RULE, a module named other
    than its rule, a rule or hazard defined twice, an unknown hook node type, or two claims of one precedence."""
    rules: dict[str, SourceRule] = {}
    hazards: dict[str, Hazard] = {}
    owner: dict[str, str] = {}
    for name, mod in modules:
        rule = getattr(mod, "RULE", None)
        if not isinstance(rule, SourceRule):
            raise RegistryError(f"source rule module {name} defines no RULE = SourceRule(...)")
        if rule.id.replace("-", "_") != name:
            raise RegistryError(f"source rule module {name} declares rule {rule.id}: name the module after it")
        if rule.id in rules:
            raise RegistryError(f"source rule {rule.id} is defined twice")
        for node_type in rule.on_node:
            if node_type not in NODE_TYPES:
                raise RegistryError(f"source rule {rule.id}: unknown hook node type {node_type!r}")
        for h in rule.hazards:
            if h.id in owner:
                raise RegistryError(f"hazard {h.id} is declared by both {owner[h.id]} and {rule.id}")
            hazards[h.id] = h
            owner[h.id] = rule.id
        rules[rule.id] = rule
    precedence: dict[int, str] = {}
    for rule in rules.values():
        for c in rule.claims:
            if c.precedence in precedence:
                raise RegistryError(f"claim precedence {c.precedence} is used by both {precedence[c.precedence]} "
                                    f"and {rule.id}: which one takes a call must be explicit")
            precedence[c.precedence] = rule.id
    return Registry(rules, hazards, owner)


def check_against(book: RuleBook) -> None:
    """Every rule of the book with a source side has its module, declaring exactly the book's hazards, and every
    module has its rule in the book; `RegistryError` otherwise (a user's rule folder can add log rules only)."""
    reg = registry()
    with_source = {r.id: r for r in book.rules if r.source is not None}
    for rid, rule in with_source.items():
        assert rule.source is not None
        mod = reg.rules.get(rid)
        if mod is None:
            unknown = sorted(h for h in rule.source.hazards if h not in reg.owner)
            raise RegistryError(f"rule {rid} ({rule.path}) has a source side but no source rule module"
                                + (f" (unknown hazard(s): {', '.join(unknown)})" if unknown else ""))
        declared = {h.id for h in mod.hazards}
        if set(rule.source.hazards) != declared:
            raise RegistryError(f"rule {rid}: source.hazards {sorted(rule.source.hazards)} in {rule.path} differ "
                                f"from its module's {sorted(declared)}")
    missing = sorted(set(reg.rules) - set(with_source))
    if missing:
        raise RegistryError(f"source rule module(s) without a rule book entry with a source side: {', '.join(missing)}")


@dataclass(frozen=True)
class RuleSet:
    """The dispatch tables of some enabled rules (what the walker and the around pass call)."""

    claims: tuple[Claim, ...]  # by precedence
    on_call: tuple[CallHook, ...]
    on_condition: tuple[ConditionHook, ...]
    on_node: Mapping[str, tuple[NodeHook, ...]]
    around: tuple[Around, ...]  # by order
    hazards: Mapping[str, Hazard]  # every hazard of the registry (hits are mapped to rules later)


@cache
def _rule_set(enabled: frozenset[str]) -> RuleSet:
    reg = registry()
    chosen = [r for rid, r in reg.rules.items() if rid in enabled]
    claims = sorted((c for r in chosen for c in r.claims), key=lambda c: c.precedence)
    nodes: dict[str, list[NodeHook]] = {}
    for r in chosen:
        for t, hooks in r.on_node.items():
            nodes.setdefault(t, []).extend(hooks)
    return RuleSet(
        claims=tuple(claims),
        on_call=tuple(h for r in chosen for h in r.on_call),
        on_condition=tuple(h for r in chosen for h in r.on_condition),
        on_node={t: tuple(v) for t, v in nodes.items()},
        around=tuple(sorted((a for r in chosen for a in r.around), key=lambda a: a.order)),
        hazards=reg.hazards,
    )


def rule_set(enabled: Iterable[str]) -> RuleSet:
    return _rule_set(frozenset(enabled))
