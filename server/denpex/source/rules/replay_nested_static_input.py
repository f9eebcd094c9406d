"""replay-nested-static-input (DPX312): a replay helper that refreshes only the top-level tensors of a graph's
static arguments, while those arguments were cloned with their nested containers (dicts, lists, tuples of
tensors). The nested tensors are never copied into again: every replay reads the values of the capture's batch.

Found from the capture: a call in the captured statements that spreads a static container (`f(*static)`); a loop
`for d, s in zip(<static>, ...)` whose body copies `d.copy_(s)` and handles no nested container itself (directly
or in a helper handed the container); and the container built by a clone that recurses into dicts or lists
(the evidence that nested tensors are expected)."""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.hits import Hit
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.parse import run_query, strip_parens, walk

_HAZARD = "nested-static-input"
_NESTED = re.compile(r"isinstance\([^)]*\b(dict|list|tuple|Mapping|Sequence|abc\.\w+)\b")
_ZIP_LOOPS = ("(for_statement left: (pattern_list . (identifier) @d) right: (call function: (identifier) @z"
              " arguments: (argument_list . (_) @first)) body: (block) @body) @loop")


def _spread(ix: FileIndex, region: CaptureRegion) -> set[str]:
    """The containers the captured statements spread into a call (`f(*static)`, `f(**static_kw)`)."""
    out: set[str] = set()
    for st in region.stmts:
        for n in walk(st):
            if n.type in ("list_splat", "dictionary_splat") and n.named_child_count:
                out.add(ix.text(n.named_children[0]))
    return out


def _top_level_copy(ix: FileIndex, body: Node, d: str) -> Node | None:
    """`d.copy_(...)` in a loop body that handles no nested container (no isinstance against dict/list there)."""
    if _NESTED.search(ix.text(body)):
        return None
    for n in walk(body):
        if n.type == "call":
            f = n.child_by_field_name("function")
            if f is not None and f.type == "attribute" and ix.text(f) == f"{d}.copy_":
                return n
    return None


def _nested_clone(ix: FileIndex, container: str) -> Node | None:
    """An assignment of `container` from a clone that recurses into dicts/lists: the nested containers are
    expected. Returns the definition of the clone function, or the assignment when it tests them inline."""
    defs = {fn.name: fn for fn in ix.by_node.values()}
    for a in run_query("(assignment left: (_) @l right: (_) @r) @a", ix.src.root).get("a", []):
        left = a.child_by_field_name("left")
        right = a.child_by_field_name("right")
        if left is None or right is None or ix.text(left) != container:
            continue
        if _NESTED.search(ix.text(right)):
            return a
        for n in walk(right):
            if n.type != "call":
                continue
            f = n.child_by_field_name("function")
            fn = defs.get(ix.text(f)) if f is not None and f.type == "identifier" else None
            if fn is not None and fn.body is not None and _NESTED.search(ix.text(fn.body)):
                return fn.node
    return None


def _helpers(ix: FileIndex, container: str) -> list[tuple[Node, Node, str]]:
    """(loop, copy call, how) for the loops over `zip(<container>, ...)` that copy only top-level tensors: in any
    function of the file, or in a function whose first parameter receives the container at a call."""
    out: list[tuple[Node, Node, str]] = []
    caps = run_query(_ZIP_LOOPS, ix.src.root)
    handed: dict[str, set[str]] = {}
    for c in run_query("(call function: (identifier) @f arguments: (argument_list . (_) @a)) @c",
                       ix.src.root).get("c", []):
        f = c.child_by_field_name("function")
        args = c.child_by_field_name("arguments")
        if f is not None and args is not None and args.named_child_count and \
                ix.text(strip_parens(args.named_children[0])) == container:
            handed.setdefault(ix.text(f), set())
    for loop, d, z, first, body in zip(caps.get("loop", []), caps.get("d", []), caps.get("z", []),
                                       caps.get("first", []), caps.get("body", []), strict=False):
        if ix.text(z) != "zip":
            continue
        src = ix.text(first)
        fn = ix.enclosing_function(loop)
        via_param = fn is not None and fn.name in handed and list(fn.params[:1]) == [src]
        if src != container and not via_param:
            continue
        copy = _top_level_copy(ix, body, ix.text(d))
        if copy is not None:
            out.append((loop, copy, f"{fn.name}()" if fn is not None else "the loop"))
    return out


def _guard_of(copy: Node, loop: Node) -> Node:
    """The condition of the `if isinstance(d, torch.Tensor):` that skips the non-tensors, else the copy itself:
    that test is where the nested containers are dropped."""
    p = copy.parent
    while p is not None and p.id != loop.id:
        if p.type == "if_statement":
            cond = p.child_by_field_name("condition")
            if cond is not None:
                return cond
        p = p.parent
    return copy


def _nested(scan: RegionScan) -> None:
    region = scan.region
    if region.kind not in ("graph", "capture_begin", "wrapper"):
        return
    ix = region.ix
    for container in sorted(_spread(ix, region)):
        evidence = _nested_clone(ix, container)
        if evidence is None:
            continue
        for loop, copy, how in _helpers(ix, container):
            name = evidence.child_by_field_name("name") if evidence.type == "function_definition" else None
            what = ix.text(name) if name is not None else None
            built = f"{what}() at line {evidence.start_point[0] + 1}" if what else \
                f"line {evidence.start_point[0] + 1}"
            scan.sink(Hit(_HAZARD, ix, _guard_of(copy, loop), region, (), [], None, (
                f"{how} refreshes only the top-level tensors of `{container}`, which {built} cloned with its "
                "nested dicts, lists and tuples: the tensors nested there keep the capture's values on every "
                "replay (silently wrong)")))


RULE = SourceRule(
    id="replay-nested-static-input",
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    around=(Around(147, _nested),),
)
