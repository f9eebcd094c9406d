"""replay-nested-static-input (DPX312): a replay helper that refreshes only the top-level tensors of a graph's
static arguments, while those arguments were cloned with their nested containers (dicts, lists, tuples of
tensors). The nested tensors are never copied into again: every replay reads the values of the capture's batch.

Found from the capture: a call in the captured statements that spreads a static container (`f(*static)`); a loop
`for d, s in zip(<static>, ...)` whose body copies `d.copy_(s)` and handles no nested container itself (directly
or in a helper handed the container); and the container built by a clone that recurses into dicts or lists
(the evidence that nested tensors are expected).

Quick fix (unsafe: it copies tensors the loop skipped): the loop's body becomes a call of a small recursive copy
helper, defined once at module level, for a loop `for d, s in zip(<static>, <new>)` whose body is only
`d.copy_(s)`, bare or under `if isinstance(d, torch.Tensor):`. A helper indexes dicts by key rather than
flattening both sides (torch.utils._pytree), so a new batch whose dict lists its keys in another order still
lands in the right buffers."""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, TextEdit
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


_COPY_HELPER = "copy_nested_"
_HELPER_TEXT = """def {name}(dst, src):
    # copy src into the static dst in place, down to the tensors nested in dicts, lists and tuples
    if isinstance(dst, {t}.Tensor):
        dst.copy_(src)
    elif isinstance(dst, dict):
        for k in dst:
            {name}(dst[k], src[k])
    elif isinstance(dst, (list, tuple)):
        for d, s in zip(dst, src):
            {name}(d, s)
"""
_DEFS = ("function_definition", "class_definition", "decorated_definition")


def _statements(block: Node) -> list[Node]:
    return [c for c in block.named_children if c.type != "comment"]


def _tensor_test(ix: FileIndex, cond: Node, d: str, t: str) -> bool:
    """`isinstance(d, torch.Tensor)` (or `Tensor`) or `torch.is_tensor(d)`."""
    cond = strip_parens(cond)
    f = cond.child_by_field_name("function") if cond.type == "call" else None
    args = cond.child_by_field_name("arguments") if cond.type == "call" else None
    a = [ix.text(x) for x in args.named_children] if args is not None else []
    if f is None:
        return False
    if ix.text(f) == "isinstance":
        return len(a) == 2 and a[0] == d and a[1] in (f"{t}.Tensor", "Tensor")
    return ix.text(f) == f"{t}.is_tensor" and a == [d]


def _only_copy(ix: FileIndex, body: Node, copy: Node, d: str, t: str) -> bool:
    """The loop body is only the copy, bare or under a tensor test with no other branch."""
    stmts = _statements(body)
    if len(stmts) != 1:
        return False
    st = stmts[0]
    if st.type == "if_statement":
        cond, cons = st.child_by_field_name("condition"), st.child_by_field_name("consequence")
        if cond is None or cons is None or st.child_by_field_name("alternative") is not None or \
                not _tensor_test(ix, cond, d, t):
            return False
        inner = _statements(cons)
        if len(inner) != 1:
            return False
        st = inner[0]
    return st.type == "expression_statement" and st.named_child_count == 1 and st.named_children[0].id == copy.id


def _helper_name(ix: FileIndex, t: str) -> tuple[str, bool]:
    """The copy helper's name, and whether the file defines it already (an earlier fix of another loop)."""
    i = 1
    while True:
        name = _COPY_HELPER if i == 1 else f"{_COPY_HELPER}{i}"
        if _HELPER_TEXT.format(name=name, t=t) in ix.src.text:
            return name, True
        if not ix.has(name.encode()):
            return name, False
        i += 1


def _helper_row(ix: FileIndex, loop: Node) -> int:
    """Where the helper goes: before the file's first definition at module level that does not come after the
    loop's own top-level statement (so that every fix in a file inserts it at one place, and it is defined
    before module-level code that runs the loop), and above the comment lines directly over that definition."""
    top = loop
    while top.parent is not None and top.parent.type != "module":
        top = top.parent
    first = next((c for c in ix.src.root.named_children if c.type in _DEFS and c.start_byte <= top.start_byte), top)
    row = first.start_point[0]
    prev = first.prev_sibling
    while prev is not None and prev.type == "comment" and prev.start_point[1] == 0 and \
            prev.end_point[0] == row - 1 and prev.start_point[0] > 1:  # not a shebang or coding line
        row = prev.start_point[0]
        prev = prev.prev_sibling
    return row


def _refresh_fix(ix: FileIndex, loop: Node, copy: Node) -> Fix | None:
    """Replace the body of `for d, s in zip(static, new): [if isinstance(d, torch.Tensor):] d.copy_(s)` with a
    call of the recursive copy helper."""
    torch = ix.imports.items_for("torch")
    left, right, body = (loop.child_by_field_name(k) for k in ("left", "right", "body"))
    if not torch or left is None or right is None or body is None:
        return None
    t = torch[0]
    targets = left.named_children
    args = right.child_by_field_name("arguments")
    if len(targets) != 2 or any(x.type != "identifier" for x in targets) or args is None:
        return None
    positional = [a for a in args.named_children if a.type != "keyword_argument"]
    if len(positional) != 2 or any(a.type in ("list_splat", "dictionary_splat") for a in positional):
        return None
    d, s = ix.text(targets[0]), ix.text(targets[1])
    cargs = copy.child_by_field_name("arguments")
    if cargs is None or [ix.text(a) for a in cargs.named_children] != [s] or not _only_copy(ix, body, copy, d, t):
        return None
    first = _statements(body)[0]
    if first.start_point[0] <= right.end_point[0]:
        return None  # `for ...: d.copy_(s)` on one row
    name, defined = _helper_name(ix, t)
    call = f"{ix.src.indent_of(first)}{name}({d}, {s})"
    edits = [TextEdit(first.start_point[0], 0, *F.row_end(ix, body.end_point[0]), call)]
    if not defined:
        edits.append(F.insert_at(_helper_row(ix, loop), 0, _HELPER_TEXT.format(name=name, t=t) + "\n\n"))
    return F.fix("Refresh the nested static inputs in place (copy recursively into their dicts, lists and tuples)",
                 "unsafe", edits)


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
            fx = _refresh_fix(ix, loop, copy)
            scan.sink(Hit(_HAZARD, ix, _guard_of(copy, loop), region, (), [fx] if fx else [], None, (
                f"{how} refreshes only the top-level tensors of `{container}`, which {built} cloned with its "
                "nested dicts, lists and tuples: the tensors nested there keep the capture's values on every "
                "replay (silently wrong)")))


RULE = SourceRule(
    id="replay-nested-static-input",
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    around=(Around(147, _nested),),
)
