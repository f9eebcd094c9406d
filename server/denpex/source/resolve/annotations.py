"""The types a parameter's annotation names, for values.parameter.

`quantizer: Quantizer` was read as an instance of Quantizer, but `Optional[Quantizer]`, `Union[A, B]`,
and `A | None` gave nothing: the subscript of a typing alias has no value, so a method called on
the parameter (`quantizer.set_usage(...)`) resolved to nothing. TransformerEngine annotates most of its
quantizer and recipe parameters that way. Only typing's own Optional/Union (as imported, or spelled
`typing.` / an alias of the module) are taken apart: a project's class named Optional is left alone.
"""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.resolve.index import FileIndex

_TYPING = ("typing", "typing_extensions")
_MAX_PARTS = 8  # members of one annotation followed (a Union of more is not worth a guess)


def _generic(n: Node) -> tuple[Node, list[Node]] | None:
    """(head, arguments) of `A[B, C]`: the grammar spells it a generic_type after a plain name (`Optional[A]`)
    and a subscript after a dotted one (`typing.Optional[A]`); None for any other node."""
    if n.type == "generic_type" and n.named_child_count == 2:
        head, params = n.named_children
        return (head, list(params.named_children)) if params.type == "type_parameter" else None
    if n.type == "subscript" and (value := n.child_by_field_name("value")) is not None:
        return value, n.children_by_field_name("subscript")
    return None


def _spells(ix: FileIndex, head: Node, names: set[str] | tuple[str, ...], modules: tuple[str, ...]) -> bool:
    """`head` names one of `names` of one of `modules` (imported by name, or through the module)."""
    text = ix.text(head).replace(" ", "")
    if text.rsplit(".", 1)[-1] not in names:
        return False
    full = ix.imports.resolve_dotted(text)
    return (full.rsplit(".", 1)[0] if "." in full else "") in modules


def _unwrapped(n: Node) -> Node:
    """The grammar wraps each annotation, and each argument of a generic, in a `type` node."""
    return n.named_children[0] if n.type == "type" and n.named_child_count == 1 else n


def annotated_types(ix: FileIndex, ann: Node) -> list[Node]:
    """The expressions naming the types an annotation admits, `None` left out: `Optional[A]` -> A,
    `Union[A, B]` and `A | B` -> A, B; any other annotation is itself (values.of reads it). A string
    annotation gives nothing (its name is no node of the tree), nor does a union of more than _MAX_PARTS."""
    out: list[Node] = []
    todo = [ann]
    while todo and len(out) <= _MAX_PARTS:
        n = _unwrapped(todo.pop())
        if n.type in ("none", "string") or (n.type == "identifier" and ix.text(n) == "None"):
            continue
        generic = _generic(n)
        if generic is not None and _spells(ix, generic[0], ("Optional", "Union"), _TYPING):
            todo.extend(reversed(generic[1]))
            continue
        if n.type == "binary_operator" and (op := n.child_by_field_name("operator")) is not None and \
                op.type == "|":
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            todo.extend(x for x in (right, left) if x is not None)
            continue
        out.append(n)
    return out if len(out) <= _MAX_PARTS else []


# containers whose iteration and indexing give their type argument's instances
_CONTAINERS = {"List", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection", "Tuple", "Set",
               "FrozenSet", "AbstractSet", "Deque"}
_BUILTIN_CONTAINERS = {"list", "tuple", "set", "frozenset"}
_ABC = ("typing", "typing_extensions", "collections.abc", "collections")


def container_elements(ix: FileIndex, n: Node) -> list[Node] | None:
    """The element annotations of `List[A]`, `Sequence[A]`, `tuple[A, B]`, `list[A]` ... (typing's, collections.abc's
    or the builtins'), None for any other annotation. `Tuple[A, ...]`'s ellipsis is no element."""
    generic = _generic(n)
    if generic is None:
        return None
    head, args = generic
    text = ix.text(head).replace(" ", "")
    builtin = "." not in text and text in _BUILTIN_CONTAINERS and ix.imports.lookup(text) is None
    if not builtin and not _spells(ix, head, _CONTAINERS, _ABC):
        return None  # neither the builtin itself (`list[A]`, not a name the file rebinds) nor typing's / abc's
    return [a for a in map(_unwrapped, args) if a.type != "ellipsis"]
