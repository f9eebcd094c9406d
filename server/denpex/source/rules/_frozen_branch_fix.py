"""The code fix of replay-frozen-branch (DPX310): move a branch on a host flag to the device.

Built only for one narrow shape, where the rewrite is known to be valid and to do what the branch did:

- the condition is the flag itself or `not flag`: `self.<attr>` in a method of the flag's class, a name read
  where it is bound (a module global, or a local of the capture's own scope), or a parameter of a plain function
  whose only call, in the capture's block, passes such a local (the call then passes the tensor);
- the branch is `h = a` (optionally `else: h = b`, the same name), or `return a` with `else: return b` or a
  `return b` right after it, with no comment inside and no device work that could not run on both sides
  (in-place methods, host reads, reshapes and reductions that `torch.where` would broadcast);
- every host write of the flag is a plain assignment statement of the finding's file that the fix can follow
  with a `fill_()` (a `self.` write in the flag's class, or a write on a name bound to an instance of it); the
  flag is first set by a statement of its constructor body (attribute) or of its scope's body (name).

The edits: a 0-dim device tensor next to that first write, `h = torch.where(flag_t, a, h)` for the branch, and
`flag_t.fill_(flag)` after every other write. Both sides now run on every replay: the fix is "unsafe".
"""

from __future__ import annotations

import ast
import re

from tree_sitter import Node

from denpex.source.engine.facts import fresh_name_in
from denpex.source.fixes import edits as F
from denpex.source.model import Fix, TextEdit
from denpex.source.resolve.callgraph import Env
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Frame, Walk
from denpex.source.rules._frozen import files_with
from denpex.source.syntax.mentions import all_in_tree, is_self_attribute
from denpex.source.syntax.parse import strip_parens, walk

TITLE = "Device flag: keep it in a 0-dim device tensor (fill_() it where it is set) and select with torch.where"

_EXPR = frozenset({"call", "attribute", "identifier", "binary_operator", "unary_operator",
                   "parenthesized_expression", "integer", "float"})
# work that would now run on both sides and change state, read the host, or change the shape `where` broadcasts
# (or the dtype it promotes)
_HOST = frozenset({"item", "tolist", "cpu", "numpy", "print", "backward", "synchronize"})
_SHAPE = frozenset({"sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "norm", "prod", "std", "var",
                    "all", "any", "view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose",
                    "t", "expand", "repeat", "cat", "stack", "split", "chunk", "narrow", "gather", "index_select",
                    "masked_select", "nonzero", "unique", "topk", "sort",
                    # and the dtype: `where` promotes both sides to one
                    "half", "float", "double", "bfloat16", "int", "long", "bool", "to", "type"})
_BAD_NODES = frozenset({"subscript", "lambda", "named_expression", "await", "yield", "list_comprehension",
                        "generator_expression", "set_comprehension", "dictionary_comprehension", "string"})
_BOOLISH = frozenset({"comparison_operator", "not_operator", "true", "false"})
_CTOR_CHAIN = frozenset({"cuda", "to", "eval", "train", "half", "float", "bfloat16", "double"})


def branch_fix(w: Walk, subj: Node, frame: Frame) -> Fix | None:
    """The device-flag fix for the branch whose condition holds `subj`, or None outside the shape."""
    ix = frame.ix
    site = _branch(ix, subj)
    if site is None:
        return None
    torch = ix.imports.items_for("torch")
    if not torch:
        return None  # `import torch.nn as nn` alone binds no `torch` for the new calls
    if_stmt, negated = site
    if subj.type == "attribute":
        plan = _attribute_plan(w, ix, subj, frame, torch[0])
    elif frame.env.get(ix.text(subj)) is not None:
        plan = _param_plan(w, ix, subj, frame, torch[0])
    else:
        plan = _name_plan(w, ix, subj, frame.env, torch[0])
    if plan is None:
        return None
    flag_t, edits = plan
    branch = _branch_edit(w, ix, frame, if_stmt, negated, flag_t, torch[0])
    if branch is None:
        return None
    edits.append(branch)
    fx = F.fix(TITLE, "unsafe", edits, in_place=True)  # every edit lands in the finding's own file
    if fx is None:
        return None
    try:
        ast.parse(F.apply_edits(ix.src.text, fx.edits))
    except (SyntaxError, ValueError):
        return None  # a shape the checks above did not foresee: no fix rather than broken code
    return fx


# ---- the branch ----------------------------------------------------------------------------------------------
def _branch(ix: FileIndex, subj: Node) -> tuple[Node, bool] | None:
    """The `if` whose whole condition is `subj` or `not subj`, and whether it is negated."""
    n, p = subj, subj.parent
    while p is not None and p.type == "parenthesized_expression":
        n, p = p, p.parent
    negated = False
    if p is not None and p.type == "not_operator":
        negated = True
        n, p = p, p.parent
        while p is not None and p.type == "parenthesized_expression":
            n, p = p, p.parent
    if p is None or p.type != "if_statement" or p.child_by_field_name("condition") != n:
        return None
    return p, negated


def _stmts(block: Node | None) -> list[Node] | None:
    """The statements of a block, None when it holds a comment (the rewrite would drop it)."""
    if block is None or any(c.type == "comment" for c in block.children):
        return None
    return list(block.named_children)


def _assigned(ix: FileIndex, stmt: Node) -> tuple[Node, Node] | None:
    """`h = <expr>`: the name and the expression."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    a = stmt.named_children[0]
    if a.type != "assignment" or a.child_by_field_name("type") is not None:
        return None
    left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier" or right.type not in _EXPR:
        return None
    return left, right


def _returned(stmt: Node) -> Node | None:
    if stmt.type != "return_statement" or stmt.named_child_count != 1:
        return None
    v = stmt.named_children[0]
    return v if v.type in _EXPR else None


def _plain(ix: FileIndex, expr: Node) -> bool:
    """Nothing in `expr` that running it on both sides would change: see _HOST, _SHAPE, in-place methods."""
    for n in walk(expr):
        if n.type in _BAD_NODES:
            return False
        if n.type == "call":
            f = n.child_by_field_name("function")
            if f is None:
                return False
            name = ix.text(f).rsplit(".", 1)[-1]
            if name in _HOST or name in _SHAPE or (name.endswith("_") and not name.endswith("__")):
                return False
    return True


def _branch_edit(w: Walk, ix: FileIndex, frame: Frame, if_stmt: Node, negated: bool, flag_t: str, torch: str
                 ) -> TextEdit | None:
    alts = if_stmt.children_by_field_name("alternative")
    if len(alts) > 1 or (alts and alts[0].type != "else_clause"):
        return None
    body = _stmts(if_stmt.child_by_field_name("consequence"))
    other = _stmts(alts[0].child_by_field_name("body")) if alts else []
    if body is None or other is None or len(body) != 1 or len(other) > 1:
        return None
    # a comment on the `if` row (a marker, a reason) stays with the statement that replaces the branch
    head = ix.src.line_text(if_stmt.start_point[0])
    cond = if_stmt.child_by_field_name("condition")
    if cond is None or cond.end_point[0] != if_stmt.start_point[0]:
        return None
    tail = head[ix.src.end(cond)[1]:].split(":", 1)[-1].strip()
    note = f"  {tail}" if tail.startswith("#") else ""
    if tail and not note:
        return None  # `if flag: h = a` on one row
    last = if_stmt
    got = _assigned(ix, body[0])
    if got is not None:
        target, a = got
        name = ix.text(target)
        if other:
            got_b = _assigned(ix, other[0])
            if got_b is None or ix.text(got_b[0]) != name:
                return None
            b_text, b_node = ix.text(got_b[1]), got_b[1]
        else:
            if not _bound_before(ix, name, if_stmt):
                return None
            b_text, b_node = name, target
        lead = f"{name} = "
    else:
        ra = _returned(body[0])
        if ra is None:
            return None
        a = ra
        if other:
            rb = _returned(other[0])
        else:
            nxt = if_stmt.next_named_sibling
            rb = _returned(nxt) if nxt is not None else None
            if rb is not None and nxt is not None:
                last = nxt
        if rb is None:
            return None
        b_text, b_node = ix.text(rb), rb
        lead = "return "
    if not _plain(ix, a) or (b_node is not None and not _plain(ix, b_node)):
        return None
    if not (w.tensorish(a, frame) or (b_node is not None and w.tensorish(b_node, frame))):
        return None  # torch.where of two Python numbers would turn a number into a tensor
    yes, no = ix.text(a), b_text
    if negated:
        yes, no = no, yes
    if not F.owns_lines(ix, if_stmt) or not F.owns_lines(ix, last):
        return None
    indent = ix.src.indent_of(if_stmt)
    text = f"{indent}{lead}{torch}.where({flag_t}, {yes}, {no}){note}"
    return TextEdit(if_stmt.start_point[0], 0, *F.row_end(ix, last.end_point[0]), text)


def _bound_before(ix: FileIndex, name: str, at: Node) -> bool:
    """`name` is a parameter of the scope of `at` or assigned in it before `at` (else `h = where(.., h)` would
    read an unbound name where the branch only bound it)."""
    assign, scope, is_param = ix.lookup(name, at)
    if is_param:
        return scope is not None and scope.node.id == ix.scope_of(at).node.id
    return assign is not None and assign.start_byte < at.start_byte and (
        scope is not None and scope.node.id == ix.scope_of(at).node.id)



# ---- the flag's writes ---------------------------------------------------------------------------------------
def _write_stmt(ix: FileIndex, assign: Node) -> bool:
    """A write the fix can follow with a statement: its own statement, on its own rows, not chained."""
    st = assign.parent
    right = assign.child_by_field_name("right")
    return (st is not None and st.type == "expression_statement" and st.named_child_count == 1 and right is not None
            and right.type not in ("assignment", "augmented_assignment") and F.owns_lines(ix, st))


def _as_bool(ix: FileIndex, assign: Node, target: str) -> str:
    """The flag's truth after the write, as the host sees it (`if flag:`): bool() unless the value already is one."""
    right = assign.child_by_field_name("right")
    if assign.type == "assignment" and right is not None:
        r = strip_parens(right)
        if r.type in ("true", "false"):
            return ix.text(r)
        if r.type in _BOOLISH:
            return target
    return f"bool({target})"


def _fill_after(ix: FileIndex, assign: Node, target: str, tensor: str) -> TextEdit:
    st = assign.parent
    assert st is not None
    return F.insert_after_statement(ix, st, [f"{tensor}.fill_({_as_bool(ix, assign, target)})"])


def _create_after(ix: FileIndex, assign: Node, target: str, tensor: str, torch: str) -> TextEdit:
    st = assign.parent
    assert st is not None
    value = _as_bool(ix, assign, target)
    return F.insert_after_statement(ix, st, [f'{tensor} = {torch}.tensor({value}, device="cuda")'])


def _while_capturing(w: Walk, ix: FileIndex, write: Node, holder: Node) -> bool:
    """The write may run while the graph is captured: it sits in the capture's block or in the function holding
    the branch, or its function is called from either (a fill_() there would be recorded, and every replay would
    set the tensor back to the value at capture)."""
    region = w.region
    spans = [(ix, holder.start_byte, holder.end_byte)]
    if region.ix is ix and holder.start_byte <= region.anchor.start_byte < holder.end_byte:
        spans = []  # the branch is in the capture's own scope: only the capture's block runs under it
    spans.append((region.ix, region.anchor.start_byte, region.end_byte))
    if any(f is ix and a <= write.start_byte < b for f, a, b in spans):
        return True
    fn = ix.enclosing_function(write)
    if fn is None:
        return False
    name = re.escape(fn.name.encode())
    word = re.compile(rb"(?<![\w.])" + name + rb"\s*\(|\." + name + rb"\s*\(")
    return any(word.search(f.src.data, a, b) is not None for f, a, b in spans)


def _attribute_plan(w: Walk, ix: FileIndex, subj: Node, frame: Frame, torch: str
                    ) -> tuple[str, list[TextEdit]] | None:
    """`self.<attr>` of class C: created after the first `self.<attr> = ...` of C.__init__'s body, filled after
    every other write of the file; no other file may write `.<attr>`."""
    obj, a = subj.child_by_field_name("object"), subj.child_by_field_name("attribute")
    fn = frame.func
    if obj is None or a is None or ix.text(obj) != "self" or fn is None or fn.class_name is None:
        return None
    holder = ix.enclosing_function(subj)
    if holder is None or holder.node.id != fn.node.id:
        return None  # a nested function's `self`
    attr, cls = ix.text(a), ix.classes.get(fn.class_name)
    if cls is None or attr in cls.methods or _class_level(ix, cls.node, attr):
        return None  # a property or a class attribute: not a plain instance flag
    init = cls.methods.get("__init__")
    body = init.node.child_by_field_name("body") if init is not None else None
    if body is None:
        return None
    if not all_in_tree(ix, attr) or re.search(rf"""['"]{re.escape(attr)}['"]""", ix.src.text):
        return None  # a mention the tree does not hold, or setattr/getattr by name: writes the fix cannot see
    pattern = rf"\.{re.escape(attr)}\s*(?:[-+*/|&^%@]|//|\*\*|>>|<<)?=(?!=)"
    if any(f.path != ix.path for f in files_with(w.resolver, pattern, ix, needles=("." + attr,))):
        return None  # written in another file: the fix edits one file
    first: Node | None = None
    for st in body.named_children:
        inner = st.named_children[0] if st.type == "expression_statement" and st.named_child_count else None
        if inner is not None and inner.type == "assignment" and is_self_attribute(ix, inner.child_by_field_name("left"),
                                                                               attr):
            first = inner
            break
    if first is None or not _write_stmt(ix, first):
        return None
    tensor_attr = fresh_name_in(ix, f"{attr}_t")
    edits = [_create_after(ix, first, f"self.{attr}", f"self.{tensor_attr}", torch)]
    for n in walk(ix.src.root):
        if n.type != "attribute" or n.id == subj.id:
            continue
        na = n.child_by_field_name("attribute")
        if na is None or ix.text(na) != attr:
            continue
        p = n.parent
        if p is not None and p.type in ("pattern_list", "tuple_pattern", "list_pattern", "delete_statement"):
            return None
        if p is None or p.type not in ("assignment", "augmented_assignment") or p.child_by_field_name("left") != n:
            continue  # a read
        if p.id == first.id:
            continue
        recv = n.child_by_field_name("object")
        if recv is not None and _unrelated_self(ix, recv, cls.name):
            continue  # `self.<attr>` of another class of the file, neither a base nor a subclass of this one
        if _while_capturing(w, ix, p, fn.node) or not _write_stmt(ix, p):
            return None  # set while capturing, or a write the fix cannot follow
        if recv is None or not _instance_of(ix, recv, cls.name):
            return None  # another object's attribute of the same name, or one the fix cannot tell
        target = ix.text(n)
        edits.append(_fill_after(ix, p, target, f"{ix.text(recv)}.{tensor_attr}"))
    return f"self.{tensor_attr}", edits



def _class_level(ix: FileIndex, cls_node: Node, attr: str) -> bool:
    body = cls_node.child_by_field_name("body")
    for st in body.named_children if body is not None else []:
        inner = st.named_children[0] if st.type == "expression_statement" and st.named_child_count else None
        left = inner.child_by_field_name("left") if inner is not None and inner.type == "assignment" else None
        if left is not None and ix.text(left) == attr:
            return True
    return False


def _related(ix: FileIndex, a: str, b: str, depth: int = 0) -> bool:
    """Class `a` is `b` or derives from it, as far as this file's classes tell (an unknown base may be it)."""
    if a == b:
        return True
    info = ix.classes.get(a)
    if info is None or depth > 8:
        return True
    for base in info.bases:
        short = base.rsplit(".", 1)[-1]
        if short == b or (short in ix.classes and _related(ix, short, b, depth + 1)):
            return True
        if short not in ix.classes and not base.startswith("torch.") and base != "object":
            return True  # a base from elsewhere: it may derive from `b`
    return False


def _unrelated_self(ix: FileIndex, recv: Node, cls: str) -> bool:
    recv = strip_parens(recv)
    if recv.type != "identifier" or ix.text(recv) != "self":
        return False
    c = ix.enclosing_class(recv)
    return c is not None and not _related(ix, c.name, cls) and not _related(ix, cls, c.name)


def _instance_of(ix: FileIndex, recv: Node, cls: str) -> bool:
    """`self` in a method of `cls`, or a name bound in its scope to `cls(...)` (through `.cuda()`, `.to(...)`)."""
    recv = strip_parens(recv)
    if recv.type != "identifier":
        return False
    if ix.text(recv) == "self":
        c = ix.enclosing_class(recv)
        fn = ix.enclosing_function(recv)
        return c is not None and c.name == cls and fn is not None and fn.class_name == cls
    if not all_in_tree(ix, ix.text(recv)):
        return False
    assign, scope, _p = ix.lookup(ix.text(recv), recv)
    if assign is None or assign.value is None or scope is None or assign.stmt.type != "assignment":
        return False
    if len(scope.assigns.get(ix.text(recv), [])) != 1:
        return False  # rebound: which object it holds at the write is not one constructor's
    call = strip_parens(assign.value)
    while call.type == "call":
        f = call.child_by_field_name("function")
        if f is None:
            return False
        if f.type == "identifier":
            return ix.text(f) == cls
        if f.type != "attribute":
            return False
        meth, inner = f.child_by_field_name("attribute"), f.child_by_field_name("object")
        if meth is None or inner is None or ix.text(meth) not in _CTOR_CHAIN:
            return False
        call = strip_parens(inner)
    return False


def _param_plan(w: Walk, ix: FileIndex, subj: Node, frame: Frame, torch: str
                ) -> tuple[str, list[TextEdit]] | None:
    """A parameter of a plain function bound by its only call, a call of the capture's block, to a name of the
    capture's scope: that name gets the tensor (see _name_plan), the call passes the tensor, and the branch reads
    the parameter as one. The parameter must be read only by the condition."""
    name, fn, region = ix.text(subj), frame.func, w.region
    b = frame.env.get(name)
    if b is None or fn is None or fn.class_name is not None or region.ix is not ix or b.ix is not ix:
        return None
    arg = strip_parens(b.node)
    if arg.type != "identifier" or not (region.anchor.start_byte <= arg.start_byte < region.end_byte):
        return None
    body = fn.node.child_by_field_name("body")
    if body is None or name in ix.scope(fn.node).assigns or sum(
            1 for n in walk(body) if n.type == "identifier" and ix.text(n) == name) != 1:
        return None  # read elsewhere in the function (as a number, a flag): a tensor there changes that too
    spelled = rf"(?<![\w.]){re.escape(fn.name)}(?!\w)"
    if not all_in_tree(ix, fn.name) or len(re.findall(spelled, ix.src.text)) != 2 or any(
            f.path != ix.path for f in files_with(w.resolver, spelled, ix, needles=(fn.name,))):
        return None  # called (or named) anywhere but its definition and this one call: others pass a bool
    plan = _name_plan(w, ix, arg, b.env, torch)
    if plan is None:
        return None
    tensor, edits = plan
    edits.append(F.replace_node(ix, arg, tensor))
    return name, edits


def _name_plan(w: Walk, ix: FileIndex, subj: Node, env: Env, torch: str
               ) -> tuple[str, list[TextEdit]] | None:
    """A name read where it is bound (a module global, or a local of the capture's scope): created after its
    first assignment, a statement of its scope's body before the capture; filled after every other
    rebinding (in its scope, and in the functions that declare it `global`)."""
    name = ix.text(subj)
    if env.get(name) is not None:
        return None  # a parameter bound by a caller further up: the tensor would have to travel further
    _assign, scope, is_param = ix.lookup(name, subj)
    if is_param or scope is None:
        return None
    owner = scope.node
    if owner.type == "function_definition" and (
            ix is not w.region.ix or ix.scope_of(subj).node.id != owner.id
            or ix.scope_of(w.region.anchor).node.id != owner.id):
        return None  # a local of another function than the capture's: made again (and lost) at every call
    if not all_in_tree(ix, name) or re.search(rf"\bnonlocal\b[^\n]*\b{re.escape(name)}\b|\b{re.escape(name)}\s*:=",
                                            ix.src.text):
        return None  # a mention the tree does not hold, a nonlocal or walrus write: writes the fix cannot see
    scopes = [scope]
    if owner.type == "module":
        for info in ix.functions:
            s = ix.scope(info.node)
            if name in s.globals:
                scopes.append(s)
    writes = [a for s in scopes for a in s.assigns.get(name, [])]
    if not writes:
        return None
    for a in writes:
        if a.stmt.type not in ("assignment", "augmented_assignment") or a.unpacked is not None:
            return None  # a loop target, a with-as or an unpacked target: no statement to follow
        left = a.stmt.child_by_field_name("left")
        if left is None or left.type != "identifier" or not _write_stmt(ix, a.stmt):
            return None
    writes.sort(key=lambda a: a.start_byte)
    first = writes[0].stmt
    first_st = first.parent
    body = owner if owner.type == "module" else owner.child_by_field_name("body")
    if first.type != "assignment" or first_st is None or body is None or first_st.parent is None or (
            first_st.parent.id != body.id):
        return None  # first bound under a branch or in a function: the tensor would not always exist
    region = w.region
    if region.ix is ix and first.start_byte >= region.anchor.start_byte:
        return None
    holder = ix.scope_of(subj).node
    if any(_while_capturing(w, ix, a.stmt, holder) for a in writes[1:]):
        return None
    tensor = fresh_name_in(ix, f"{name}_t")
    edits = [_create_after(ix, first, name, tensor, torch)]
    edits.extend(_fill_after(ix, a.stmt, name, tensor) for a in writes[1:])
    return tensor, edits
