"""String constants a branch condition compares, so that a factory's arms can be decided for the run a program
makes by default: `if name == "adam":` where every caller passes `args.optimizer` and the file that parsed
`args` declares `add_argument("--optimizer", default="adam")`.

Only strings are followed: a literal, `.lower()` / `.upper()` / `.strip()` of one, a name bound once before
the read, a parameter (its default where no caller passes it, else what every caller passes, when they
agree), and the attribute of a parsed argparse namespace (its option's default). Anything else is not known,
and an arm whose condition is not known stays (values.py takes the union of the arms)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from tree_sitter import Node

from denpex.source.resolve.args import _kwarg, bind
from denpex.source.syntax.parse import strip_parens, tokens

if TYPE_CHECKING:
    from denpex.source.resolve.index import FileIndex, FuncInfo

# the call sites of a function in the workspace (Values.call_sites)
Sites = Callable[["FileIndex", "FuncInfo"], list[tuple["FileIndex", Node]]]
_MAX_DEPTH = 8
_LITERALS = frozenset({"string", "concatenated_string", "integer", "float", "true", "false", "none"})
_STR_METHODS: dict[str, Callable[[str], str]] = {"lower": str.lower, "upper": str.upper, "strip": str.strip}


def string_of(ix: FileIndex, expr: Node, sites: Sites, depth: int = 0) -> str | None:
    """The string `expr` (in `ix`) holds when the program runs with its defaults, or None when not known."""
    if depth > _MAX_DEPTH:
        return None
    expr = strip_parens(expr)
    t = expr.type
    if t == "string":
        text = ix.text(expr)
        if text[:1] in "fFbB" or not any(q in text for q in ("'", '"')):
            return None
        try:
            v = ast.literal_eval(text)  # a literal only: nothing is run
        except (ValueError, SyntaxError):
            return None
        return v if isinstance(v, str) else None
    if t == "call":
        f = expr.child_by_field_name("function")
        args = expr.child_by_field_name("arguments")
        if f is not None and f.type == "attribute" and args is not None and not args.named_child_count:
            m = f.child_by_field_name("attribute")
            obj = f.child_by_field_name("object")
            op = _STR_METHODS.get(ix.text(m)) if m is not None else None
            if op is not None and obj is not None:
                inner = string_of(ix, obj, sites, depth + 1)
                return op(inner) if inner is not None else None
        return None
    if t == "identifier":
        name = ix.text(expr)
        assign, scope, is_param = ix.lookup(name, expr)
        if is_param and scope is not None:
            info = ix.by_node.get(scope.node.id)
            return _parameter(ix, info, name, sites, depth) if info is not None else None
        if assign is not None and assign.value is not None and assign.stmt.type == "assignment" and scope is not None \
                and len(scope.assigns.get(name, ())) == 1:
            return string_of(ix, assign.value, sites, depth + 1)
        return None
    if t == "attribute":
        obj = expr.child_by_field_name("object")
        attr = expr.child_by_field_name("attribute")
        if obj is not None and attr is not None:
            return _option(ix, obj, ix.text(attr), sites, depth)
    return None


def _parameter(ix: FileIndex, fn: FuncInfo, name: str, sites: Sites, depth: int) -> str | None:
    default = _default(ix, fn, name)
    found: set[str | None] = set()
    for cix, call in sites(ix, fn):
        arg = bind(cix, call, fn).get(name)
        if arg is None:
            if _splats(call):
                return None  # a *args / **kwargs may fill it
            found.add(string_of(ix, default, sites, depth + 1) if default is not None else None)
        else:
            found.add(string_of(cix, arg, sites, depth + 1))
        if None in found or len(found) > 1:
            return None
    if not found:
        return string_of(ix, default, sites, depth + 1) if default is not None else None
    return found.pop()


def _option(ix: FileIndex, obj: Node, attr: str, sites: Sites, depth: int) -> str | None:
    """`obj.attr` where `obj` is a parsed argparse namespace: the option's default in the file that parsed it
    (through the parameters it was passed as)."""
    obj = strip_parens(obj)
    if obj.type != "identifier" or depth > _MAX_DEPTH:
        return None
    name = ix.text(obj)
    assign, scope, is_param = ix.lookup(name, obj)
    if is_param and scope is not None:
        fn = ix.by_node.get(scope.node.id)
        if fn is None or _receiver(fn, name):
            return None  # an instance of a workspace class is no parsed namespace: its callers are not searched
        found: set[str | None] = set()
        for cix, call in sites(ix, fn):
            arg = bind(cix, call, fn).get(name)
            found.add(_option(cix, arg, attr, sites, depth + 1) if arg is not None else None)
            if None in found or len(found) > 1:
                return None
        return found.pop() if found else None
    v = strip_parens(assign.value) if assign is not None and assign.value is not None else None
    f = v.child_by_field_name("function") if v is not None and v.type == "call" else None
    if f is None or "args" not in ix.text(f).rsplit(".", 1)[-1]:
        return None  # not `parser.parse_args()` / `get_args()`
    default = option_defaults(ix).get(attr)
    return string_of(ix, default, sites, depth + 1) if default is not None else None


def _receiver(fn: FuncInfo, name: str) -> bool:
    """`name` is the receiver of method `fn` (`self`, `cls`): its first parameter, not a staticmethod's."""
    if fn.class_name is None or not fn.params or fn.params[0] != name:
        return False
    return not any(fn.src.node_text(d).lstrip("@").strip() == "staticmethod" for d in fn.decorators)


def option_defaults(ix: FileIndex) -> dict[str, Node]:
    """dest -> the default expression of every `add_argument(...)` of the file that has one (once per file)."""
    key = ("option_defaults", 0)
    table = ix.scope_tables.get(key)
    if table is None:
        table = ix.scope_tables[key] = {}
        if ix.has(b"add_argument"):
            for tok in tokens(ix.src, "add_argument", "identifier"):
                call = tok.parent.parent if tok.parent is not None and tok.parent.type == "attribute" else None
                args = call.child_by_field_name("arguments") if call is not None and call.type == "call" else None
                default = _kwarg(ix, args, "default") if args is not None else None
                if args is None or default is None:
                    continue
                dest = _kwarg(ix, args, "dest")
                flags = [a for a in args.named_children if a.type == "string"]
                spelled = dest if dest is not None else (flags[-1] if flags else None)
                if spelled is not None:
                    table.setdefault(ix.text(spelled).strip("'\"").lstrip("-").replace("-", "_"), [default])
    return {k: v[0] for k, v in table.items()}


def _default(ix: FileIndex, fn: FuncInfo, name: str) -> Node | None:
    params = fn.node.child_by_field_name("parameters")
    for p in params.named_children if params is not None else ():
        if p.type in ("default_parameter", "typed_default_parameter"):
            n = p.child_by_field_name("name")
            if n is not None and fn.src.node_text(n) == name:
                return p.child_by_field_name("value")
    return None


def _splats(call: Node) -> bool:
    args = call.child_by_field_name("arguments")
    return args is not None and any(a.type in ("list_splat", "dictionary_splat") for a in args.named_children)


def decided(ix: FileIndex, cond: Node, sites: Sites) -> bool | None:
    """The value of a branch condition comparing a string (`name == "adam"`, `kind != "sgd"`, `x in ("a", "b")`,
    `not ...`), or None when it is not known."""
    cond = strip_parens(cond)
    if cond.type == "not_operator":
        arg = cond.child_by_field_name("argument")
        inner = decided(ix, arg, sites) if arg is not None else None
        return None if inner is None else not inner
    if cond.type != "comparison_operator" or cond.named_child_count != 2:
        return None
    ops = [ix.text(c) for c in cond.children if not c.is_named]
    if len(ops) != 1 and ops != ["not", "in"]:
        return None
    op = " ".join(ops)
    if op not in ("==", "!=", "in", "not in"):
        return None
    left, right = cond.named_children
    # both sides must be known strings: the side that is a literal is read first, since a left side followed
    # through its callers costs a call-site search per hop and `x.mode == 0` is settled by the 0 alone
    if op in ("==", "!="):
        first, second = (right, left) if strip_parens(right).type in _LITERALS else (left, right)
        a = string_of(ix, first, sites)
        b = string_of(ix, second, sites) if a is not None else None
        return None if a is None or b is None else (a == b) == (op == "==")
    r = strip_parens(right)
    if r.type not in ("tuple", "list", "set") or not r.named_child_count:
        return None
    items = [string_of(ix, c, sites) for c in r.named_children]
    if any(i is None for i in items):
        return None
    lv = string_of(ix, left, sites)
    return None if lv is None else (lv in items) == (op == "in")


def arm_dead(ix: FileIndex, stmt: Node, stop: Node, sites: Sites) -> bool:
    """`stmt` sits in an if/elif/else arm that the program's default run does not take (between `stmt` and the
    scope node `stop`): its own condition is false, or an earlier arm's condition of the same `if` is true."""
    n: Node | None = stmt
    while n is not None and n.id != stop.id:
        p = n.parent
        if p is None:
            break
        if p.type == "if_statement" and n.type == "block" and _child_is(p, "consequence", n):
            cond = p.child_by_field_name("condition")
            if cond is not None and decided(ix, cond, sites) is False:
                return True
        elif n.type in ("elif_clause", "else_clause") and p.type == "if_statement":
            cond = p.child_by_field_name("condition")
            if cond is not None and decided(ix, cond, sites) is True:
                return True
            for c in p.named_children:
                if c.id == n.id:
                    break
                if c.type == "elif_clause":
                    cc = c.child_by_field_name("condition")
                    if cc is not None and decided(ix, cc, sites) is True:
                        return True
            if n.type == "elif_clause":
                own = n.child_by_field_name("condition")
                if own is not None and decided(ix, own, sites) is False:
                    return True
        n = p
    return False


def _child_is(parent: Node, field_name: str, node: Node) -> bool:
    c = parent.child_by_field_name(field_name)
    return c is not None and c.id == node.id
