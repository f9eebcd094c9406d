"""Where a name is mentioned: the identifier nodes spelled a name in a byte range (found from the text, not by
walking the tree), and the definition that holds a node."""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from functools import cache

from tree_sitter import Node

from denpex.source.resolve.index import FileIndex


@cache
def _name_re(name: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(name.encode()) + rb"(?![A-Za-z0-9_])")


def identifiers(ix: FileIndex, name: str, start: int, end: int) -> Iterator[Node]:
    """The identifier nodes spelled `name` that start in bytes [start, end), in document order, lazily (a text
    search for the whole word, then a lookup in the tree: no walk, and no scopes built as a side effect). A range
    of more than a few kilobytes is searched through the file's offsets of the word, found once per file and
    name, so the many captures of one module do not search the module again each."""
    ix.touched.append((start, end))
    ix.src.need_word(name, start, end)
    find = ix.src.root.descendant_for_byte_range
    n = len(name.encode())
    offsets: Iterable[int]
    if end - start > 16384:
        every = word_offsets(ix, name)
        offsets = itertools.islice(every, bisect_left(every, start), None)
    else:
        offsets = (m.start() for m in _name_re(name).finditer(ix.src.data, start, end))
    for off in offsets:
        if off + n > end:
            break
        node = find(off, off + n)
        if node is not None and node.type == "identifier" and node.start_byte == off and node.end_byte == off + n:
            yield node


_WORD = re.compile(rb"[A-Za-z0-9_]+")


def word_offsets(ix: FileIndex, name: str) -> list[int]:
    """Every whole-word occurrence of `name` in the file, remembered on the file's index. After a few names,
    every ASCII word of the file is indexed in one pass (many captures, each with its own names)."""
    found = ix.word_offsets.get(name)
    if found is None:
        key = name.encode()
        if len(ix.word_offsets) >= 8 and _WORD.fullmatch(key):
            if ix.word_index is None:
                index: dict[bytes, list[int]] = {}
                for m in _WORD.finditer(ix.src.data):
                    index.setdefault(m.group(), []).append(m.start())
                ix.word_index = index
            found = ix.word_index.get(key, [])
        else:
            found = [m.start() for m in _name_re(name).finditer(ix.src.data)]
        ix.word_offsets[name] = found
    return found


def def_of(node: Node) -> Node | None:
    """The function definition or module whose body holds `node` (lambdas and classes do not count)."""
    p = node.parent
    while p is not None and p.type not in ("function_definition", "module"):
        p = p.parent
    return p


def in_nested_definition(node: Node, owner: Node) -> bool:
    """Inside a class body or lambda that sits between `node` and its scope's `owner`."""
    p = node.parent
    while p is not None and p.id != owner.id:
        if p.type in ("class_definition", "lambda"):
            return True
        p = p.parent
    return False


def all_in_tree(ix: FileIndex, word: str) -> bool:
    """Every mention of `word` is in the tree (a lazily parsed file may not hold them all yet)."""
    w = word.encode("utf-8", "surrogatepass")
    return ix.src.lazy is None or len(ix.src.occurrences(w, word_end=True)) == len(ix.src.occurrences_in_tree(w))


def is_self_attribute(ix: FileIndex, node: Node | None, attr: str | None) -> bool:
    """`node` is `self.<attr>`."""
    if node is None or node.type != "attribute":
        return False
    o, a = node.child_by_field_name("object"), node.child_by_field_name("attribute")
    return o is not None and a is not None and ix.text(o) == "self" and ix.text(a) == attr
