"""capture-implicit-bool (DPX112): a tensor used as a Python condition inside a capture (`if (x > 0).any():`,
`while t:`, `assert t`, `a if t else b`) is `bool(tensor)`: a host read."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.facts import next_stmt
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, TextEdit
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Frame, Hazard, SourceRule, Walk
from denpex.source.syntax.parse import strip_parens

_WHERE = "Compute both branches on the device with torch.where"


def _condition(w: Walk, cond: Node, frame: Frame, if_stmt: Node | None, ternary: Node | None) -> None:
    c = strip_parens(cond)
    if c.type in ("boolean_operator", "not_operator"):
        return  # the operands are checked when the operator is visited
    if not w.tensorish(c, frame):
        return
    fixes: list[Fix | None] = []
    if if_stmt is not None:
        fixes.append(_where_fix_if(w, frame.ix, if_stmt, c))
    if ternary is not None:
        fixes.append(_where_fix_ternary(w, frame.ix, ternary))
    w.report("implicit-bool", c, frame, fixes)


def _where_fix_if(w: Walk, ix: FileIndex, if_stmt: Node, cond: Node) -> Fix | None:
    """`if c: return a` + `return b`, or `if c: x = a else: x = b`, as one torch.where."""
    cons = if_stmt.child_by_field_name("consequence")
    alts = if_stmt.children_by_field_name("alternative")
    if cons is None:
        return None
    body = [c for c in cons.named_children if c.type != "comment"]
    if len(body) != 1 or F._has_multiline_string(if_stmt):
        return None
    a = body[0]
    tw = f"{w.torch}.where"
    if not alts and a.type == "return_statement" and a.named_child_count == 1:
        nxt = next_stmt(if_stmt)
        if nxt is None or nxt.type != "return_statement" or nxt.named_child_count != 1:
            return None
        new = f"return {tw}({ix.text(cond)}, {ix.text(a.named_children[0])}, {ix.text(nxt.named_children[0])})"
        sl, sc = ix.src.start(if_stmt)
        el, ec = ix.src.end(nxt)
        return F.fix(_WHERE, "unsafe", [TextEdit(sl, sc, el, ec, new)], in_place=True)
    if len(alts) == 1 and alts[0].type == "else_clause":
        eb = alts[0].child_by_field_name("body")
        eb_stmts = [c for c in eb.named_children if c.type != "comment"] if eb is not None else []
        if len(eb_stmts) != 1:
            return None
        x, y = a, eb_stmts[0]
        if x.type == y.type == "expression_statement" and (
                x.named_children[0].type == y.named_children[0].type == "assignment"):
            ax, ay = x.named_children[0], y.named_children[0]
            lx, ly = ax.child_by_field_name("left"), ay.child_by_field_name("left")
            rx, ry = ax.child_by_field_name("right"), ay.child_by_field_name("right")
            if lx is None or ly is None or rx is None or ry is None or ix.text(lx) != ix.text(ly):
                return None
            new = f"{ix.text(lx)} = {tw}({ix.text(cond)}, {ix.text(rx)}, {ix.text(ry)})"
            return F.fix(_WHERE, "unsafe", [F.replace_node(ix, if_stmt, new)], in_place=True)
        if x.type == y.type == "return_statement" and x.named_child_count == y.named_child_count == 1:
            new = f"return {tw}({ix.text(cond)}, {ix.text(x.named_children[0])}, {ix.text(y.named_children[0])})"
            return F.fix(_WHERE, "unsafe", [F.replace_node(ix, if_stmt, new)], in_place=True)
    return None


def _where_fix_ternary(w: Walk, ix: FileIndex, node: Node) -> Fix | None:
    if node.named_child_count != 3:
        return None
    a, cond, b = node.named_children
    new = f"{w.torch}.where({ix.text(cond)}, {ix.text(a)}, {ix.text(b)})"
    return F.fix("Select on the device with torch.where", "unsafe", [F.replace_node(ix, node, new)], in_place=True)


RULE = SourceRule(
    id="capture-implicit-bool",
    hazards=(Hazard("implicit-bool"),),
    on_condition=(_condition,),
)
