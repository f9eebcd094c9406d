"""nav.py answers what climbing with `Node.parent` answers, on every node of real files and of deep generated
ones, with and without its parent record (DEEP and SLOW_PARENT_S forced down so the record is used on ordinary
code too)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tree_sitter import Node

from denpex.rulebook import load_rulebook
from denpex.source.syntax import nav
from denpex.source.syntax.parse import ParsedSource, parse, walk
from tests.source.helpers import SCENARIOS

KINDS = [frozenset({"function_definition"}), frozenset({"function_definition", "module"}),
         frozenset({"class_definition"}), frozenset({"string"}), frozenset({"with_statement", "module"})]


def _corpus() -> Iterator[tuple[str, str]]:
    for p in sorted(SCENARIOS.glob("*.py"))[:40]:
        yield p.name, p.read_text(encoding="utf-8")
    for rule in load_rulebook().rules:
        if rule.source is not None:
            yield f"{rule.id}.invalid", rule.source.invalid
    yield "deep-sum", "def f():\n    return " + " + ".join(["a"] * 120) + "\n"
    yield "deep-parens", "class C:\n    def m(self):\n        y = " + "(" * 90 + "'''s\n'''" + ")" * 90 + "\n"
    yield "broken", "def f(:\n  with x\n    (((\n"


def _up(n: Node) -> list[Node]:
    out = []
    p = n.parent
    while p is not None:
        out.append(p)
        p = p.parent
    return out


def _statement(n: Node) -> Node:
    while n.parent is not None and n.parent.type not in ("block", "module"):
        n = n.parent
    return n


def _ids(nodes: list[Node] | Iterator[Node]) -> list[int]:
    return [n.id for n in nodes]


def _check(src: ParsedSource) -> int:
    tree_nav = src.nav
    checked = 0
    for n in walk(src.root):
        up = _up(n)
        assert _ids(tree_nav.ancestors(n)) == _ids(up)
        assert tree_nav.statement_of(n).id == _statement(n).id
        for kinds in KINDS:
            want = next((p for p in up if p.type in kinds), None)
            got = tree_nav.enclosing(n, kinds)
            assert (got.id if got else None) == (want.id if want else None), (n.type, sorted(kinds))
        assert tree_nav.climb(n, "block-or-args", _step) == _climb_ref(n)
        checked += 1
    return checked


def _step(child: Node, parent: Node) -> tuple[bool, tuple[str, str] | None]:
    # an answer that depends on the child as well as the parent, as branch_head's does
    return (True, (child.type, parent.type)) if parent.type in ("block", "argument_list") else (False, None)


def _climb_ref(n: Node) -> tuple[str, str] | None:
    p = n.parent
    while p is not None:
        if p.type in ("block", "argument_list"):
            return n.type, p.type
        n, p = p, p.parent
    return None


@pytest.mark.parametrize(("deep", "slow"), [(nav.DEEP, nav.SLOW_PARENT_S), (2, 0.0)])
def test_nav_matches_parent_climbing(deep: int, slow: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nav, "DEEP", deep)
    monkeypatch.setattr(nav, "SLOW_PARENT_S", slow)  # 0: every parent step records its statement
    total = 0
    for _name, text in _corpus():
        total += _check(parse(text))
    assert total > 10_000


def test_walk_with_parents() -> None:
    src = parse("def f(x):\n    return g(x[0].a, [1, (2,)])\n")
    fn = src.root.named_children[0]
    seen = 0
    for n, p, gp in nav.walk_with_parents(fn):
        assert (p.id if p else None) == (n.parent.id if n.parent else None)
        assert (gp.id if gp else None) == (n.parent.parent.id if n.parent and n.parent.parent else None)
        seen += 1
    assert seen == sum(1 for _ in walk(fn))


def test_nav_follows_the_tree_when_it_is_reparsed() -> None:
    # a lazily parsed file reparses in place when it grows (a new tree, same source object): the nav of the
    # old tree must not answer for the new one
    src = parse("def f():\n    y = (((2)))\n")
    first = src.nav
    src._reparse()
    assert src.nav is not first
    assert _check(src) > 10
