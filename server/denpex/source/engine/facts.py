"""Small facts about code that several rules read: statement neighbours, names bound, optimizers, constants
folded in conditions, fresh names for inserted code."""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.capture.regions import _string_value
from denpex.source.engine.hits import stmt_of
from denpex.source.resolve.index import (
    FileIndex,
    FuncInfo,
    Kind,
    decorator_target,
    kwarg,
    positional,
)
from denpex.source.syntax.parse import run_query, strip_parens, walk


def next_stmt(n: Node) -> Node | None:
    s = n.next_named_sibling
    while s is not None and s.type == "comment":
        s = s.next_named_sibling
    return s


def prev_stmt(n: Node) -> Node | None:
    s = n.prev_named_sibling
    while s is not None and s.type == "comment":
        s = s.prev_named_sibling
    return s



def siblings(node: Node, after: bool) -> list[Node]:
    """The named siblings after `node` in order, or those before it nearest first."""
    out = []
    s = node.next_named_sibling if after else node.prev_named_sibling
    while s is not None:
        out.append(s)
        s = s.next_named_sibling if after else s.prev_named_sibling
    return out


def bound_names(ix: FileIndex, stmt: Node) -> set[str]:
    out: set[str] = set()
    if stmt.type == "expression_statement" and stmt.named_child_count and stmt.named_children[0].type == "assignment":
        left = stmt.named_children[0].child_by_field_name("left")
        if left is not None:
            for n in walk(left):
                if n.type == "identifier":
                    out.add(ix.text(n))
    return out


CAPTURABLE_OPTIMIZERS = frozenset({"Adam", "AdamW", "Adamax", "Adadelta", "Adagrad", "ASGD", "NAdam", "RAdam",
                                   "RMSprop", "Rprop", "SparseAdam"})


def capturable_optimizer(ix: FileIndex, k: Kind) -> bool:
    if k.node is None:
        return False
    f = k.node.child_by_field_name("function")
    q = ix.qualname(f) if f is not None else None
    return q is not None and q.rsplit(".", 1)[-1] in CAPTURABLE_OPTIMIZERS


def truthy(ix: FileIndex, node: Node) -> bool:
    node = strip_parens(node)
    if node.type == "true":
        return True
    if node.type == "identifier":
        assign, _s, _p = ix.lookup(ix.text(node), node)
        if assign is not None and assign.value is not None:
            return strip_parens(assign.value).type == "true"
        return True  # unknown: give the benefit of the doubt
    return node.type not in ("false", "none", "integer")


# a class of the project handed the optimizer and named like a schedule (`WarmupCosine(opt, ...)`)
_SCHEDULE_WORDS = re.compile(r"sched|warmup|cosine|decay|anneal|cyclic|^lr|lr$", re.IGNORECASE)


def has_scheduler(ix: FileIndex, opt: Node) -> bool:
    """The optimizer named `opt` is handed to a learning-rate scheduler in the file (torch's, or a class named
    like one: its lr changes between steps)."""
    name = ix.text(opt)
    ix.src.need_word(name)
    caps = run_query("(call) @call", ix.src.root)
    for call in caps.get("call", []):
        f = call.child_by_field_name("function")
        if f is None:
            continue
        q = ix.qualname(f) or ""
        last = q.rsplit(".", 1)[-1] or ix.text(f).rsplit(".", 1)[-1]
        if q.startswith("torch.optim.lr_scheduler.") or q.endswith(("LR", "Scheduler", "Annealing", "Warmup")) or (
                last[:1].isupper() and _SCHEDULE_WORDS.search(last)):
            pos = positional(call)
            if pos and ix.text(pos[0]) == name:
                return True
            o = kwarg(ix, call, "optimizer")
            if o is not None and ix.text(o) == name:
                return True
    return False


def logging_level_low(text: str) -> bool:
    for marker in ("basicConfig(", "setLevel("):
        pos = text.find(marker)
        while pos >= 0:
            seg = text[pos : pos + 200]
            if "INFO" in seg or "DEBUG" in seg or "NOTSET" in seg:
                return True
            pos = text.find(marker, pos + 1)
    return False


def fresh_name_in(ix: FileIndex, base: str) -> str:
    if not ix.has(base.encode()):
        return base
    return fresh_name(ix.src.text, base)


def fresh_name(text: str, base: str) -> str:
    if base not in text:
        return base
    i = 2
    while f"{base}{i}" in text:
        i += 1
    return f"{base}{i}"



def value_text(ix: FileIndex, node: Node) -> str:
    assign, _s, _p = ix.lookup(ix.text(node), node)
    return ix.text(assign.value) if assign is not None and assign.value is not None else ""


# module constants folded in `if` conditions (`FIX = "none"` ... `if FIX == "flag":`)
_ENV_READS = frozenset({"os.environ.get", "os.getenv"})


def const_value(ix: FileIndex, node: Node, depth: int = 0, nest: int = 0) -> object:
    """The value of a literal, or of a name bound once at module level to a literal, or of an environment
    variable read with a literal default (`os.environ.get("FLASHINFER_VALIDATE_INPUTS", "0")`: the default, as
    the program runs with the variable unset, as consts.py takes an option's default); `_UNKNOWN` otherwise."""
    node = strip_parens(node)
    t = node.type
    if t == "call" and depth < 3:
        f = node.child_by_field_name("function")
        if f is not None and ix.qualname(f) in _ENV_READS:
            args = positional(node)
            default = args[1] if len(args) > 1 else kwarg(ix, node, "default")
            if args and isinstance(const_value(ix, args[0], depth + 1), str):
                return const_value(ix, default, depth + 1) if default is not None else None
        return _UNKNOWN
    if t == "true":
        return True
    if t == "false":
        return False
    if t == "none":
        return None
    if t == "integer":
        try:
            return int(ix.text(node), 0)
        except ValueError:
            return _UNKNOWN
    if t == "string":
        text = ix.text(node)
        if any(c.type == "interpolation" for c in node.named_children) or text[:1] not in ("'", '"'):
            return _UNKNOWN
        return _string_value(ix, node)
    if t in ("tuple", "list", "set"):
        if nest > _MAX_FOLD:
            return _UNKNOWN
        vals = [const_value(ix, c, depth, nest + 1) for c in node.named_children if c.type != "comment"]
        return _UNKNOWN if any(v is _UNKNOWN for v in vals) else tuple(vals)
    if t in ("identifier", "attribute") and ix.text(node).endswith("TYPE_CHECKING") and ix.qualname(node) in (
            "typing.TYPE_CHECKING", "typing_extensions.TYPE_CHECKING"):
        return False  # True for type checkers only
    if t == "identifier" and depth < 3:  # a name bound to a name bound to a literal, no further
        name = ix.text(node)
        assign, scope, is_param = ix.lookup(name, node)
        if is_param or assign is None or assign.value is None or scope is None or scope.node.type != "module":
            return _UNKNOWN
        if len(scope.assigns.get(name, ())) != 1 or name in scope.globals:
            return _UNKNOWN
        st = stmt_of(assign.stmt, ix.src)
        if st.parent is None or st.parent.type != "module":
            return _UNKNOWN  # bound inside a branch, loop, with or try
        return const_value(ix, assign.value, depth + 1)
    return _UNKNOWN


_UNKNOWN = object()
_MAX_FOLD = 64  # nesting depth of a folded constant or condition (generated code goes deeper: unknown)


def const_truth(ix: FileIndex, cond: Node | None, depth: int = 0) -> bool | None:
    """True/False when a condition folds to a constant (module constants, literals, ==, !=, in, not in, not,
    and, or); None when it does not (also past a nesting depth that real conditions never reach)."""
    if cond is None or depth > _MAX_FOLD:
        return None
    cond = strip_parens(cond)
    t = cond.type
    if t == "not_operator":
        arg = cond.child_by_field_name("argument")
        v = const_truth(ix, arg, depth + 1)
        return None if v is None else not v
    if t == "boolean_operator":
        a = const_truth(ix, cond.child_by_field_name("left"), depth + 1)
        b = const_truth(ix, cond.child_by_field_name("right"), depth + 1)
        op = next((ix.text(c) for c in cond.children if not c.is_named), "")
        if op == "and":
            return False if a is False or b is False else (True if a and b else None)
        return True if a is True or b is True else (False if a is False and b is False else None)
    if t == "comparison_operator":
        operands = [c for c in cond.named_children if c.type != "comment"]
        ops = " ".join(ix.text(c) for c in cond.children if not c.is_named)
        if len(operands) != 2 or ops not in ("==", "!=", "in", "not in"):
            return None
        lv, rv = (const_value(ix, o) for o in operands)
        if lv is _UNKNOWN or rv is _UNKNOWN:
            return None
        if ops in ("in", "not in"):
            if not isinstance(rv, tuple):
                return None
            return (lv in rv) == (ops == "in")
        return (lv == rv) == (ops == "==")
    cv = const_value(ix, cond)
    return None if cv is _UNKNOWN or isinstance(cv, tuple) else bool(cv)


def dead_code(ix: FileIndex, node: Node) -> bool:
    """`node` sits in a branch whose condition folds to a constant that never takes it."""
    child = node
    p = node.parent
    while p is not None and p.type not in ("function_definition", "module"):
        if p.type == "if_statement":
            cons = p.child_by_field_name("consequence")
            if cons is not None and cons.id == child.id and const_truth(ix, p.child_by_field_name("condition")) is False:
                return True
            if child.type in ("elif_clause", "else_clause") and const_truth(ix, p.child_by_field_name("condition")) is True:
                return True
        elif p.type == "elif_clause":
            cons = p.child_by_field_name("consequence")
            if cons is not None and cons.id == child.id and const_truth(ix, p.child_by_field_name("condition")) is False:
                return True
        child, p = p, p.parent
    return False


def param_defaults(ix: FileIndex, fn: Node) -> dict[str, Node]:
    """The parameters of function `fn` that have a default, with the default's expression."""
    params = fn.child_by_field_name("parameters")
    out: dict[str, Node] = {}
    for p in params.named_children if params is not None else []:
        if p.type in ("default_parameter", "typed_default_parameter"):
            name, value = p.child_by_field_name("name"), p.child_by_field_name("value")
            if name is not None and value is not None:
                out[ix.text(name)] = value
    return out


def has_splat(call: Node) -> bool:
    """The call passes `*args` or `**kwargs`: which parameters it binds is not known from its text."""
    args = call.child_by_field_name("arguments")
    return args is None or args.type != "argument_list" or any(
        a.type in ("list_splat", "dictionary_splat") for a in args.named_children)


_NESTED = frozenset({"function_definition", "class_definition", "lambda"})


_MEMO_DECORATORS = frozenset({"functools.lru_cache", "functools.cache"})


def memoised(ix: FileIndex, fn: FuncInfo) -> bool:
    """`fn` is decorated `@lru_cache(...)` / `@functools.cache`: its body runs on a cache miss only (as
    memo_miss's branches)."""
    return any(decorator_target(ix, d) in _MEMO_DECORATORS for d in fn.decorators)


_HOLDERS = ("self.", "cls.")  # a cache on the object, or on the class (a singleton's `cls._instance`)


def memo_miss(ix: FileIndex, if_stmt: Node) -> bool:
    """An `if` that fills a cache kept on the object (or its class) when it misses: `if key not in self.cache:`,
    `if self.x is None:` / `if cls._instance is None:`, or `if v is None:` with `v = self.cache.get(key)` before
    it, whose body stores into that cache (`self.cache[key] = ...`, `self.x = ...`). Its body computes what a
    first call keeps for the later ones."""
    cond = if_stmt.child_by_field_name("condition")
    body = if_stmt.child_by_field_name("consequence")
    if cond is None or body is None or if_stmt.children_by_field_name("alternative"):
        return False
    cond = strip_parens(cond)
    if cond.type != "comparison_operator" or cond.named_child_count != 2:
        return False
    ops = " ".join(ix.text(c) for c in cond.children if not c.is_named)
    left, right = (strip_parens(c) for c in cond.named_children)
    target: str | None = None
    subscripted = False
    if ops == "not in" and right.type == "attribute" and ix.text(right).startswith(_HOLDERS):
        target, subscripted = ix.text(right), True
    elif ops == "is" and right.type == "none":
        if left.type == "attribute" and ix.text(left).startswith(_HOLDERS):
            target = ix.text(left)
        elif left.type == "identifier":
            assign, _scope, is_param = ix.lookup(ix.text(left), left)
            value = strip_parens(assign.value) if assign is not None and assign.value is not None else None
            fn = value.child_by_field_name("function") if value is not None and value.type == "call" else None
            if not is_param and fn is not None and fn.type == "attribute" and ix.text(fn).endswith(".get"):
                obj = fn.child_by_field_name("object")
                if obj is not None and obj.type == "attribute" and ix.text(obj).startswith(_HOLDERS):
                    target, subscripted = ix.text(obj), True
    if target is None:
        return False
    stack = list(body.named_children)
    while stack:
        n = stack.pop()
        if n.type in _NESTED:
            continue
        if n.type == "assignment":
            lhs = n.child_by_field_name("left")
            if lhs is not None:
                if subscripted and lhs.type == "subscript":
                    v = lhs.child_by_field_name("value")
                    if v is not None and ix.text(v) == target:
                        return True
                if not subscripted and ix.text(lhs) == target:
                    return True
        stack.extend(n.named_children)
    return False
