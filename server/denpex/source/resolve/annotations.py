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


def _typing_name(ix: FileIndex, head: Node) -> str | None:
    """`Optional` / `Union` when `head` spells typing's (imported by name, or through the module)."""
    text = ix.text(head).replace(" ", "")
    name = text.rsplit(".", 1)[-1]
    if name not in ("Optional", "Union"):
        return None
    full = ix.imports.resolve_dotted(text)
    module = full.rsplit(".", 1)[0] if "." in full else ""
    return name if module in _TYPING else None


def annotated_types(ix: FileIndex, ann: Node) -> list[Node]:
    """The expressions naming the types an annotation admits, `None` left out: `Optional[A]` -> A,
    `Union[A, B]` and `A | B` -> A, B; any other annotation is itself (values.of reads it). A string
    annotation gives nothing (its name is no node of the tree), nor does a union of more than _MAX_PARTS."""
    out: list[Node] = []
    todo = [ann]
    while todo and len(out) <= _MAX_PARTS:
        n = todo.pop()
        if n.type == "type" and n.named_child_count == 1:
            n = n.named_children[0]  # the grammar wraps each annotation, and each member of a generic
        if n.type in ("none", "string") or (n.type == "identifier" and ix.text(n) == "None"):
            continue
        if n.type == "generic_type" and n.named_child_count == 2:  # `Optional[A]` (a plain name before `[`)
            head, params = n.named_children
            if params.type == "type_parameter" and _typing_name(ix, head) is not None:
                todo.extend(reversed(params.named_children))
                continue
        if n.type == "subscript":  # `typing.Optional[A]` (a dotted name before `[`)
            value = n.child_by_field_name("value")
            if value is not None and _typing_name(ix, value) is not None:
                todo.extend(reversed(n.children_by_field_name("subscript")))
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
    if n.type == "generic_type" and n.named_child_count == 2:
        head, params = n.named_children
        args = params.named_children if params.type == "type_parameter" else []
    elif n.type == "subscript" and (value := n.child_by_field_name("value")) is not None:
        head, args = value, n.children_by_field_name("subscript")
    else:
        return None
    text = ix.text(head).replace(" ", "")
    name = text.rsplit(".", 1)[-1]
    if "." not in text and name in _BUILTIN_CONTAINERS and ix.imports.lookup(name) is None:
        pass  # the builtin itself (`list[A]`), not a name the file rebinds
    elif name in _CONTAINERS:
        full = ix.imports.resolve_dotted(text)
        if (full.rsplit(".", 1)[0] if "." in full else "") not in _ABC:
            return None
    else:
        return None
    out = []
    for a in args:
        a = a.named_children[0] if a.type == "type" and a.named_child_count == 1 else a
        if a.type != "ellipsis":
            out.append(a)
    return out
