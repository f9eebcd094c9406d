"""Call arguments: the keyword and positional arguments of a call, and the argument bound to each parameter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

if TYPE_CHECKING:
    from denpex.source.resolve.index import FileIndex, FuncInfo

_STAR = frozenset({"list_splat_pattern", "keyword_separator"})  # `*args` / a bare `*`: positionals end here


def _slots(fn: FuncInfo) -> list[str]:
    """The names of `fn`'s parameters a positional argument can fill, in order (those before `*` / `*args`);
    read from the function's own file, not the caller's."""
    out: list[str] = []
    params = fn.node.child_by_field_name("parameters")
    for p in params.named_children if params is not None else ():
        inner = p.named_children[0] if p.type == "typed_parameter" and p.named_child_count else p
        if inner.type in _STAR or p.type in _STAR:
            break
        if p.type in ("identifier", "default_parameter", "typed_parameter", "typed_default_parameter"):
            name = _param_name(fn, p)
            if name is not None:
                out.append(name)
    return out


def bind(ix: FileIndex, call: Node, fn: FuncInfo, skip: int = 0) -> dict[str, Node]:
    """The argument of `call` (in `ix`) for each parameter of `fn` it binds: by keyword wherever spelled, by
    position up to the first `*args` (what a splat fills is not known, so nothing after it binds by position);
    a method's `self` / `cls` is taken by the receiver, `skip` more positionals by a `functools.partial`."""
    args = call.child_by_field_name("arguments")
    out: dict[str, Node] = {}
    if args is None:
        return out
    names = _slots(fn)
    if names and names[0] in ("self", "cls") and fn.class_name is not None:
        names = names[1:]
    names = names[skip:]
    pos = 0
    splat = False
    for a in args.named_children:
        if a.type == "keyword_argument":
            k, v = a.child_by_field_name("name"), a.child_by_field_name("value")
            if k is not None and v is not None:
                out[ix.text(k)] = v
        elif a.type == "list_splat":
            splat = True
        elif a.type not in ("dictionary_splat", "comment"):
            if not splat and pos < len(names):
                out.setdefault(names[pos], a)
            pos += 1
    return out


def _kwarg(ix: FileIndex, args: Node, name: str) -> Node | None:
    for a in args.named_children:
        if a.type == "keyword_argument":
            n = a.child_by_field_name("name")
            if n is not None and ix.text(n) == name:
                return a.child_by_field_name("value")
    return None


def kwarg(ix: FileIndex, call: Node, name: str) -> Node | None:
    args = call.child_by_field_name("arguments")
    return _kwarg(ix, args, name) if args is not None else None


def positional(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    return [a for a in args.named_children if a.type not in ("keyword_argument", "comment", "list_splat", "dictionary_splat")]


def _param_name(fn: FuncInfo, p: Node) -> str | None:
    name = p if p.type == "identifier" else p.child_by_field_name("name") or (
        p.named_children[0] if p.named_child_count else None)
    return fn.src.node_text(name) if name is not None and name.type == "identifier" else None


def accepts(ix: FileIndex, call: Node, fn: FuncInfo, skip: int = 0) -> bool:
    """`call` (in `ix`) can bind to `fn`'s parameters as Python would (the receiver taken as `bind` takes it,
    `skip` positionals pre-filled); True when a splat leaves it open. False only when the call would raise a
    TypeError: a required parameter left unfilled, too many positionals, or a keyword `fn` does not take."""
    args = call.child_by_field_name("arguments")
    if args is None or args.type != "argument_list":
        return True  # a generator-expression argument and the like: not read
    npos, keys = skip, set()
    for a in args.named_children:
        if a.type in ("list_splat", "dictionary_splat", "parenthesized_list_splat"):
            return True
        if a.type == "keyword_argument":
            k = a.child_by_field_name("name")
            if k is not None:
                keys.add(ix.text(k))
        elif a.type != "comment":
            npos += 1
    params = fn.node.child_by_field_name("parameters")
    slots: list[tuple[str, bool]] = []  # positional-capable parameters: (name, has a default)
    kwonly: list[tuple[str, bool]] = []
    posonly: set[str] = set()
    var_pos = var_kw = star = False
    for p in params.named_children if params is not None else ():
        inner = p.named_children[0] if p.type == "typed_parameter" and p.named_child_count else p
        if inner.type == "list_splat_pattern" or p.type == "list_splat_pattern":
            var_pos = star = True
        elif inner.type == "dictionary_splat_pattern" or p.type == "dictionary_splat_pattern":
            var_kw = True
        elif p.type == "keyword_separator":
            star = True
        elif p.type == "positional_separator":
            posonly.update(n for n, _d in slots)
        elif p.type in ("identifier", "typed_parameter", "default_parameter", "typed_default_parameter"):
            name = _param_name(fn, p)
            if name is None:
                return True  # a tuple parameter or a form not read: leave it open
            (kwonly if star else slots).append((name, p.type in ("default_parameter", "typed_default_parameter")))
    if slots and slots[0][0] in ("self", "cls") and fn.class_name is not None:
        slots = slots[1:]
    if npos > len(slots) and not var_pos:
        return False
    by_pos = {n for n, _d in slots[:npos]}
    names = {n for n, _d in slots} - posonly | {n for n, _d in kwonly}
    for kw in keys:
        if kw in by_pos - posonly or (kw not in names and not var_kw):
            return False  # given twice, or a keyword it does not take
    unfilled = [n for n, d in slots[npos:] if not d and (n not in keys or n in posonly)]
    return not unfilled and all(d or n in keys for n, d in kwonly)
