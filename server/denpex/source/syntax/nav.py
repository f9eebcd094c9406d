"""Going up a tree-sitter tree without a cost quadratic in its depth.

tree-sitter keeps no parent pointers: `Node.parent` descends from the root again on every call, so it costs the
node's depth, and a loop climbing with it costs depth². Generated code nests expressions thousands deep
(`a + a + ...` with 50,000 terms is a left-deep chain 50,000 nodes tall), where one such climb takes minutes.

`TreeNav` (one per tree, see `ParsedSource.nav`) climbs with `Node.parent` while that is cheap; once a climb goes
deeper than `DEEP` it records the parent of every node of that top-level statement (one walk over it) and climbs
through the record from then on; so does a single `parent` step that was slow. The nearest-enclosing lookups (and
`climb`, for a caller's own question) are memoised per node, so asking them for every node of a deep chain costs
the chain's length once, not once per node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from time import perf_counter
from typing import TypeVar, cast

from tree_sitter import Node, Tree

T = TypeVar("T")

# a climb longer than this maps its top-level statement (normal code seldom nests 64 tree levels)
DEEP = 64
# a `Node.parent` slower than this is a deep node (about 400 levels; a shallow one takes a microsecond)
SLOW_PARENT_S = 10e-6

_STATEMENT_PARENTS = frozenset({"block", "module"})
_STATEMENT_KEY = "statement_of"  # climb() memo key of statement_of (enclosing() uses its frozenset of kinds)


class TreeNav:
    def __init__(self, tree: Tree) -> None:
        self.root = tree.root_node
        self._parents: dict[int, Node] = {}  # node id -> parent, for the mapped statements
        self._mapped: set[int] = set()  # ids of the top-level statements whose nodes are in _parents
        self._climbs: dict[object, dict[int, object]] = {}

    def parent(self, node: Node) -> Node | None:
        p = self._parents.get(node.id)
        if p is not None:
            return p
        t0 = perf_counter()
        p = node.parent
        if perf_counter() - t0 > SLOW_PARENT_S and p is not None:
            # a deep node (callers that climb one step at a time never reach DEEP steps in one climb): record
            # its statement, so the next steps up from here are dictionary lookups
            self.map_statement_of(p)
        return p

    def climb(self, node: Node, key: object, step: Callable[[Node, Node], tuple[bool, T | None]]) -> T | None:
        """A memoised climb from `node`: `step(child, parent)` for each step up says (stop, answer); the answer
        of the first step that stops, or None at the root. Answers are remembered per (`key`, node) for every
        node passed, so `step` must depend only on its two nodes and on what `key` stands for."""
        memo = cast("dict[int, T | None]", self._climbs.setdefault(key, {}))
        climbed: list[int] = []
        cur = node
        found: T | None = None
        steps = 0
        while True:
            if cur.id in memo:
                found = memo[cur.id]
                break
            climbed.append(cur.id)
            p = self.parent(cur)
            if p is None:
                break
            stop, answer = step(cur, p)
            if stop:
                found = answer
                break
            steps += 1
            if steps == DEEP:
                self.map_statement_of(p)
            cur = p
        for k in climbed:
            memo[k] = found
        return found

    def ancestors(self, node: Node) -> Iterator[Node]:
        """`node`'s ancestors, innermost first, the root last."""
        steps = 0
        p = self.parent(node)
        while p is not None:
            yield p
            steps += 1
            if steps == DEEP:
                self.map_statement_of(p)
            p = self.parent(p)

    def map_statement_of(self, node: Node) -> None:
        """Record the parent of every node of the top-level statement holding `node` (once per statement)."""
        root = self.root
        if node.id == root.id:
            return
        top = root.child_with_descendant(node)
        if top is None or top.id in self._mapped:
            return
        self._mapped.add(top.id)
        parents = self._parents
        parents[top.id] = root
        stack = [top]
        while stack:
            n = stack.pop()
            for c in n.children:
                parents[c.id] = n
                if c.child_count:
                    stack.append(c)

    def enclosing(self, node: Node, kinds: frozenset[str]) -> Node | None:
        """The innermost strict ancestor of `node` whose type is in `kinds`, or None."""
        return self.climb(node, kinds, lambda _child, parent: (parent.type in kinds, parent))

    def statement_of(self, node: Node) -> Node:
        """The innermost simple or compound statement holding `node` (itself if it is one): the ancestor-or-self
        whose parent is a block or the module; the topmost node reached (the root) if there is none."""
        found = self.climb(node, _STATEMENT_KEY, lambda child, parent: (parent.type in _STATEMENT_PARENTS, child))
        return found if found is not None else self.root


def walk_with_parents(node: Node) -> Iterator[tuple[Node, Node | None, Node | None]]:
    """(n, parent, grandparent) for every node under `node`, pre-order, `node` first: a walk that needs the
    parents gets them from the walk instead of from `Node.parent` (only `node`'s own are looked up)."""
    top = node.parent
    stack: list[tuple[Node, Node | None, Node | None]] = [(node, top, top.parent if top is not None else None)]
    while stack:
        n, p, gp = stack.pop()
        yield n, p, gp
        children = n.children
        if children:
            stack.extend((c, n, p) for c in reversed(children))
