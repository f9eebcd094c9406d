"""The eager fallback: run the captured work without CUDA graphs, where the graph would have run it (see
`eager_fallback`)."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.capture.regions import CG_MODES, CaptureRegion
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, TextEdit
from denpex.source.resolve.index import FileIndex, positional
from denpex.source.syntax.mentions import def_of, identifiers
from denpex.source.syntax.parse import strip_parens, walk

_LEAVES_BODY = frozenset({"return_statement", "yield", "break_statement", "continue_statement", "global_statement",
                          "nonlocal_statement"})

def _leaves_body(stmts: list[Node]) -> bool:
    """A statement that means something else once moved: return/yield anywhere, break/continue outside a loop
    of the body, global/nonlocal."""
    stack: list[tuple[Node, bool]] = [(s, False) for s in stmts]
    while stack:
        n, in_loop = stack.pop()
        if n.type in ("function_definition", "class_definition", "lambda"):
            continue
        if n.type in _LEAVES_BODY and not (in_loop and n.type in ("break_statement", "continue_statement")):
            return True
        loop = in_loop or n.type in ("for_statement", "while_statement")
        stack.extend((c, loop) for c in n.named_children)
    return False


def bound_in(ix: FileIndex, stmts: list[Node]) -> set[str]:
    """Names the statements bind (assignment, loop, with-as and walrus targets, definitions, imports)."""
    out: set[str] = set()
    for st in stmts:
        for n in walk(st):
            target: Node | None = None
            if n.type in ("assignment", "augmented_assignment", "for_statement", "for_in_clause"):
                target = n.child_by_field_name("left")
            elif n.type == "named_expression":
                target = n.child_by_field_name("name")
            elif n.type in ("as_pattern_target", "dotted_name", "aliased_import"):
                target = n
            elif n.type in ("function_definition", "class_definition"):
                target = n.child_by_field_name("name")
            if target is None:
                continue
            if target.type == "identifier":
                out.add(ix.text(target))
            elif target.type not in ("attribute", "subscript"):
                for m in walk(target):
                    if m.type == "identifier" and (m.parent is None or m.parent.type not in ("attribute", "subscript")):
                        out.add(ix.text(m))
    return out


def read_between(ix: FileIndex, names: set[str], owner: Node, start: int, end: int) -> bool:
    """One of `names` is used in the scope `owner` between byte offsets start and end."""
    for name in sorted(names):
        for n in identifiers(ix, name, start, end):
            d = def_of(n)
            if d is not None and d.id == owner.id:
                p = n.parent
                if p is not None and p.type == "attribute" and p.child_by_field_name("attribute") == n:
                    continue
                return True
    return False


def _grad_resets(ix: FileIndex, region: CaptureRegion, body_text: str) -> list[Node]:
    """`opt.zero_grad()` statements just before the capture (only graph constructions and comments between),
    when the captured code runs a backward: a captured backward after `zero_grad(set_to_none=True)` writes
    fresh gradients on every replay, so the eager body must start from the same reset."""
    if "backward" not in body_text:
        called = {ix.text(c.child_by_field_name("function") or c) for st in region.stmts for c in walk(st) if c.type == "call"}
        for name in called:
            ix.src.need_def(name)
        callees = [f.node for f in ix.functions if f.name in called]
        ix.touched.extend((c.start_byte, c.end_byte) for c in callees)
        if not any("backward" in ix.text(c) for c in callees):
            return []
    out: list[Node] = []
    prev = region.anchor.prev_named_sibling
    while prev is not None:
        text = ix.text(prev).replace(" ", "")
        if prev.type == "comment" or (prev.type == "expression_statement" and text.endswith("CUDAGraph()")):
            prev = prev.prev_named_sibling
            continue
        if prev.type == "expression_statement" and ".zero_grad(" in text and "set_to_none=False" not in text and (
            prev.named_child_count == 1 and prev.named_children[0].type == "call"
        ):
            out.insert(0, prev)
            prev = prev.prev_named_sibling
            continue
        break
    return out


def _eager_body(region: CaptureRegion, indent: str) -> tuple[str, list[TextEdit]] | None:
    """(the captured code as eager statements at `indent`, the edits that remove the capture); None when the
    region's shape does not allow it."""
    ix = region.ix
    if region.kind == "graph" and region.with_item is not None:
        w = region.anchor
        if F._has_multiline_string(w) or not F.owns_lines(ix, w) or not ix.text(w).startswith("with"):
            return None
        body = w.child_by_field_name("body")
        if body is None or body.start_point[0] == w.start_point[0]:
            return None
        stmts = [c for c in body.named_children if c.type != "comment"]
        item = region.with_item
        value = item.child_by_field_name("value")
        if not stmts or value is None or value.type == "as_pattern":
            return None
        value = strip_parens(value)
        if value.id != region.site.id:
            # a context manager stored in a variable: only `ctx = torch.cuda.graph(g)` itself, never a choice
            # between capturing and not (`... if c else nullcontext()`)
            assign = ix.lookup(ix.text(value), value)[0] if value.type == "identifier" else None
            if assign is None or assign.value is None or strip_parens(assign.value).id != region.site.id:
                return None
        clause = next((c for c in w.children if c.type == "with_clause"), None)
        others = [c for c in clause.named_children if c.type == "with_item" and c.id != item.id] if clause is not None else []
        first, last = body.start_point[0], body.end_point[0]
        delete = F.delete_statement(ix, w)
    elif region.kind == "capture_begin" and region.end_stmt is not None:
        begin, end_stmt = region.anchor, region.end_stmt
        stmts = region.stmts
        if not stmts or begin.parent is None or end_stmt.parent != begin.parent or any(
            F._has_multiline_string(s) for s in stmts
        ):
            return None
        others = []
        first, last = begin.end_point[0] + 1, end_stmt.start_point[0] - 1
        delete = F.delete_rows(ix, begin, end_stmt)
    else:
        return None
    if delete is None or first > last or _leaves_body(stmts):
        return None
    inner = indent + ("    " if others else "")
    text = F.rows_text(ix, first, last, ix.src.indent_of(stmts[0]), inner).strip("\n")
    resets = _grad_resets(ix, region, text)
    for r in reversed(resets):
        lines = F.statement_lines(ix, r, inner)
        if lines is None:
            return None
        text = lines + text
    if others:
        text = f"{indent}with {', '.join(ix.text(o) for o in others)}:\n{text}"
    return text, [delete]


def eager_fallback(region: CaptureRegion, replays: list[Node] | None = None) -> Fix | None:
    """Run the captured work eagerly where the graph would have run it.

    A `with torch.cuda.graph(g)` block or a `capture_begin()`...`capture_end()` span is removed, and every
    `g.replay()` statement becomes the captured statements (re-indented there; other items of the `with`
    re-entered around them; a `zero_grad()` that preceded a captured backward repeated first), so each
    "replay" recomputes eagerly and the capture itself computes nothing, as a capture does. Offered only when
    all replays of the graph are known (`graph_replays`) and the captured names are not read between the
    capture and the first replay. `make_graphed_callables(f, ...)` becomes `f`; a compile mode with CUDA graphs
    becomes its mode without."""
    ix = region.ix
    title = "Run without CUDA-graph capture (eager fallback)"
    if region.kind in ("graph", "capture_begin"):
        if not replays:
            return None
        owner = ix.scope_of(region.anchor).node
        if read_between(ix, bound_in(ix, region.stmts), owner, region.end_byte, replays[0].start_byte):
            return None
        built = _eager_body(region, ix.src.indent_of(replays[0]))
        if built is None:
            return None
        edits = list(built[1])
        bodies = {ix.src.indent_of(replays[0]): built[0]}
        for r in replays:
            indent = ix.src.indent_of(r)
            if indent not in bodies:
                made = _eager_body(region, indent)
                if made is None:
                    return None
                bodies[indent] = made[0]
            edit = F.replace_statement_rows(ix, r, bodies[indent])
            if edit is None:
                return None
            edits.append(edit)
        return F.fix(title, "unsafe", edits)
    if region.kind == "graphed_callables":
        pos = positional(region.site)
        if not pos:
            return None
        return F.fix(title, "unsafe", [F.replace_node(ix, region.site, ix.text(pos[0]))])
    if region.kind == "compile":
        if region.mode_node is not None and region.mode_node.type == "string":
            text = ix.text(region.mode_node)
            for mode, repl in CG_MODES.items():
                if mode in text:
                    return F.fix("Compile without CUDA graphs (mode without cudagraphs)", "unsafe",
                                 [F.replace_node(ix, region.mode_node, text.replace(mode, repl))])
        return None
    return None
