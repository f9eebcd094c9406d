"""What a detector reports (`Hit`) and where it sits on the path from the capture (`branch_head`).

A hit names its detector (`hazard`); the rule modules in `source/rules/` declare which hazards are theirs, and
`analyse.py` turns hits into findings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from denpex.source.capture.regions import CaptureRegion
from denpex.source.model import CallStep, Fix, Severity
from denpex.source.resolve.index import FileIndex
from denpex.source.syntax.parse import ParsedSource


@dataclass
class Hit:
    hazard: str
    ix: FileIndex
    node: Node
    region: CaptureRegion
    chain: tuple[str, ...] = ()
    fixes: list[Fix] = field(default_factory=list)
    severity: Severity | None = None
    message: str | None = None
    branch: str | None = None  # a branch on the call path from the capture to here (see branch_head)
    steps: tuple[CallStep, ...] = ()  # the calls followed from the capture to here
    maybe: str | None = None  # an expression on the way resolved from its callers' arguments


_BRANCH_CLAUSES = frozenset({"if_statement", "elif_clause", "else_clause", "except_clause", "case_clause"})


def branch_head(src: ParsedSource, node: Node, anchor: Node | None) -> str | None:
    """The header of the branch (`if c:`, `elif c:`, `else:`, `except E:`, `case p:`, or a conditional
    expression's `if c`) whose body holds `node` inside its function, or None. A branch that also holds the
    capture `anchor` does not count: the capture and the line run together. The climb is memoised per tree and
    anchor (nav.py): asked for every operand of a 50,000-term chain, it costs the chain once."""
    nav = src.nav

    def step(n: Node, p: Node) -> tuple[bool, str | None]:
        if p.type in ("function_definition", "lambda", "class_definition", "module") or (
            anchor is not None and p.id == anchor.id
        ):
            return True, None
        if n.type == "block" and p.type in _BRANCH_CLAUSES and not (
            p.type == "else_clause" and ((pp := nav.parent(p)) is None or pp.type != "if_statement")
        ):  # a loop's or a try's `else:` runs in the usual case
            if anchor is not None and p.start_byte <= anchor.start_byte < p.end_byte:
                return True, None
            head = _header(src, p)
            if p.type == "else_clause" and (pp := nav.parent(p)) is not None:
                head = f"{head}` of `{_header(src, pp)}"
            return True, head
        if p.type == "conditional_expression" and p.named_child_count == 3 and p.named_children[1].id != n.id:
            return True, "if " + " ".join(src.node_text(p.named_children[1]).split())[:77]
        return False, None

    return nav.climb(node, ("branch_head", anchor.id if anchor is not None else None), step)


def _header(src: ParsedSource, clause: Node) -> str:
    """`if c:` / `except E:` ...: a clause's text up to its colon, on one line, shortened."""
    colon = next((c for c in clause.children if c.type == ":"), None)
    end = colon.end_byte if colon is not None else clause.start_byte
    head = " ".join(src.data[clause.start_byte:end].decode("utf-8", "surrogatepass").split())
    return head if len(head) <= 60 else head[:57].rstrip() + "...:"




Sink = Callable[[Hit], None]


def call_parts(ix: FileIndex, call: Node) -> tuple[Node | None, str | None, str | None, Node | None]:
    """(function node, qualified name, method name, receiver)."""
    f = call.child_by_field_name("function")
    if f is None:
        return None, None, None, None
    q = ix.qualname(f)
    if f.type == "attribute":
        attr = f.child_by_field_name("attribute")
        return f, q, ix.text(attr) if attr is not None else None, f.child_by_field_name("object")
    return f, q, None, None


def stmt_of(node: Node, src: ParsedSource) -> Node:
    """The statement holding `node` (the child of its block or module); memoised per tree (nav.py)."""
    return src.nav.statement_of(node)
