"""Call arguments: the keyword and positional arguments of a call, and the argument bound to each parameter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

if TYPE_CHECKING:
    from denpex.source.resolve.index import FileIndex


def _call_arguments(ix: FileIndex, call: Node, names: list[str]) -> dict[str, Node]:
    """The call's argument expression for each parameter name it binds (positionally, then by keyword); a
    call with `*args` / `**kwargs` binds only what is spelled before them."""
    args = call.child_by_field_name("arguments")
    out: dict[str, Node] = {}
    if args is None:
        return out
    pos = 0
    for a in args.named_children:
        if a.type in ("list_splat", "dictionary_splat"):
            break
        if a.type == "keyword_argument":
            k, v = a.child_by_field_name("name"), a.child_by_field_name("value")
            if k is not None and v is not None:
                out[ix.text(k)] = v
        elif a.type != "comment":
            if pos < len(names):
                out[names[pos]] = a
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
