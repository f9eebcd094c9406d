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
    text = fn.src.node_text
    out: list[str] = []
    params = fn.node.child_by_field_name("parameters")
    for p in params.named_children if params is not None else ():
        inner = p.named_children[0] if p.type == "typed_parameter" and p.named_child_count else p
        if inner.type in _STAR or p.type in _STAR:
            break
        if p.type == "identifier":
            out.append(text(p))
        elif p.type in ("default_parameter", "typed_parameter", "typed_default_parameter"):
            name = p.child_by_field_name("name") or (p.named_children[0] if p.named_child_count else None)
            if name is not None and name.type == "identifier":
                out.append(text(name))
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
