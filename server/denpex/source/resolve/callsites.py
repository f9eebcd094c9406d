"""Per-file syntactic tables for call resolution, built once per file tree and shared by every analysis.

The resolver asks the same questions of a file again and again: the calls whose callee is named `name`, every
`self.x = ...` of a class, the `return`s of a function. Each used to be a tree query per question (one over the
whole file for the calls); on a large workspace the call-site questions of parameter values nested several deep
and the scan spent most of its time re-running them. Here each file's tree is queried once and the answers are
kept with its `FileIndex`: an edit or a lazily parsed file whose tree grows gives a new index (workspace.py), so
the tables of an edited file go with it and those of every other file stay.

The tables hold syntax only. What an analysis records about what it read (`ix.touched`, `ix.watched`, the words
a lazily parsed file must hold, `need_word`) is still recorded by the callers on every question.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from tree_sitter import Node

from denpex.source.resolve.index import ClassInfo, FileIndex, FuncInfo, positional
from denpex.source.syntax.parse import run_query

_CALLS = "(call function: [(identifier) @f (attribute attribute: (identifier) @f)]) @c"
_SELF_WRITES = "(assignment) @a\n(call function: (attribute) arguments: (argument_list)) @c"


@dataclass
class _Tables:
    epoch: int
    calls: dict[str, list[Node]] | None = None  # called name (`name(...)`, `x.name(...)`) -> calls, in order
    named: dict[str, list[Node]] = field(default_factory=dict)  # the same, per name, before the table is built
    self_writes: dict[int, dict[str, list[tuple[Node, FuncInfo]]]] = field(default_factory=dict)  # class node id
    returns: dict[int, list[Node]] = field(default_factory=dict)  # function node id -> returned expressions


# keyed by the index object itself: a file's tables live as long as the index of its current tree
_TABLES: WeakKeyDictionary[FileIndex, _Tables] = WeakKeyDictionary()
stats = {"call_tables": 0, "class_tables": 0, "named_calls": 0}  # tables built, names found from their mentions (tests
# check that a second question builds none)


def _tables(f: FileIndex) -> _Tables:
    t = _TABLES.get(f)
    if t is None or t.epoch != f.src.epoch:  # a lazily parsed tree grew: its nodes are new
        t = _TABLES[f] = _Tables(f.src.epoch)
    return t


def calls_named(f: FileIndex, name: str) -> list[Node]:
    """The calls in `f` whose callee is `name(...)` or `<expr>.name(...)`, in document order."""
    f.src.need_word(name)  # every call of it must be in the tree (the analysis reruns once it is)
    t = _tables(f)
    if t.calls is None and len(t.named) < _NAMED_BEFORE_TABLE:
        # the first few names of a new tree (an edited file's, on every keystroke) found from where the name is
        # spelled, whose offsets are carried across edits (ParsedSource.occurrences), not by a query of the file
        found = t.named.get(name)
        if found is None:
            found = _calls_at_mentions(f, name)
            if found is not None:
                t.named[name] = found
        if found is not None:
            return found
    if t.calls is None:
        t.calls = _call_table(f)
    return t.calls.get(name, [])


def _call_table(f: FileIndex) -> dict[str, list[Node]]:
    """Every call of the file's tree by called name, in document order."""
    table: dict[str, list[Node]] = {}
    for call in run_query(_CALLS, f.src.root).get("c", []):
        fnode = call.child_by_field_name("function")
        last = fnode if fnode is not None and fnode.type == "identifier" else (
            fnode.child_by_field_name("attribute") if fnode is not None else None)
        if last is not None:
            table.setdefault(f.text(last), []).append(call)
    stats["call_tables"] += 1
    return table


_NAMED_BEFORE_TABLE = 8  # names asked of one tree before its whole call table is built
_MENTIONS_MAX = 64  # a name spelled more often is looked up in the table


def _calls_at_mentions(f: FileIndex, name: str) -> list[Node] | None:
    """`calls_named` from the mentions of `name` in the tree, in the same order (None: too many to look at)."""
    word = name.encode("utf-8", "surrogatepass")
    offsets = f.src.occurrences_in_tree(word)
    if len(offsets) > _MENTIONS_MAX:
        return None
    stats["named_calls"] += 1
    root = f.src.root
    out: list[Node] = []
    for o in offsets:
        n = root.descendant_for_byte_range(o, o + len(word))
        if n is None or n.type != "identifier" or n.start_byte != o or n.end_byte != o + len(word):
            continue  # inside a longer name, a string or a comment
        p = n.parent
        if p is not None and p.type == "attribute":
            if p.child_by_field_name("attribute") != n:
                continue
            n, p = p, p.parent
        if p is not None and p.type == "call" and p.child_by_field_name("function") == n:
            out.append(p)
    out.sort(key=lambda c: (c.start_byte, -c.end_byte))
    return out


def self_writes(f: FileIndex, cls: ClassInfo, name: str) -> list[tuple[Node, FuncInfo]]:
    """Every `self.name = v`, `self.name[k] = v`, `self.name.append(v)` / `.extend(v)` and
    `self.add_module(k, v)`-style `self.name.add_module(k, v)` in the methods of `cls`, as (v, method)."""
    t = _tables(f)
    table = t.self_writes.get(cls.node.id)
    if table is None:
        table = t.self_writes[cls.node.id] = _class_writes(f, cls)
        stats["class_tables"] += 1
    return table.get(name, [])


def _self_attr(f: FileIndex, node: Node | None) -> str | None:
    """`x` of the expression `self.x` (spaces allowed around the dot), else None."""
    if node is None or node.type != "attribute":
        return None
    o, a = node.child_by_field_name("object"), node.child_by_field_name("attribute")
    if o is None or a is None or o.type != "identifier" or f.text(o) != "self":
        return None
    return f.text(a)


def _class_writes(f: FileIndex, cls: ClassInfo) -> dict[str, list[tuple[Node, FuncInfo]]]:
    out: dict[str, list[tuple[Node, FuncInfo]]] = {}
    for m in cls.methods.values():
        body = m.body
        if body is None:
            continue
        caps = run_query(_SELF_WRITES, body)
        for asg in caps.get("a", []):
            left, right = asg.child_by_field_name("left"), asg.child_by_field_name("right")
            if left is None or right is None:
                continue
            target = left.child_by_field_name("value") if left.type == "subscript" else left
            name = _self_attr(f, target)
            if name is not None:
                out.setdefault(name, []).append((right, m))
        for call in caps.get("c", []):
            fnode = call.child_by_field_name("function")
            o = fnode.child_by_field_name("object") if fnode is not None else None
            meth = fnode.child_by_field_name("attribute") if fnode is not None else None
            name = _self_attr(f, o)
            args = positional(call)
            if name is None or meth is None or not args:
                continue
            if f.text(meth) in ("append", "extend"):
                out.setdefault(name, []).append((args[0], m))  # extend: a list, whose elements the caller takes
            elif f.text(meth) == "add_module" and len(args) > 1:
                out.setdefault(name, []).append((args[1], m))
    return out


def returned(f: FileIndex, fn: FuncInfo) -> list[Node]:
    """The expressions the function's own `return` statements return (not those of nested functions)."""
    body = fn.body
    if body is None:
        return []
    t = _tables(f)
    found = t.returns.get(fn.node.id)
    if found is None:
        found = t.returns[fn.node.id] = []
        for r in run_query("(return_statement) @r", body).get("r", []):
            owner = r.parent
            while owner is not None and owner.type not in ("function_definition", "lambda"):
                owner = owner.parent
            if owner is not None and owner.id == fn.node.id and r.named_child_count:
                found.append(r.named_children[0])
    return found
