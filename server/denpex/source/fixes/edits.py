"""Fix edits computed from the syntax tree, and applying them.

Every builder returns a `Fix` (or None when the shape of the code does not allow a clean edit). Edits replace
whole nodes or whole lines; statement moves re-indent line by line and refuse statements that contain
multi-line strings, so a fix never changes text outside its edits and always leaves valid Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tree_sitter import Node

from denpex.errors import DenpexError
from denpex.source.model import Fix, Safety, TextEdit
from denpex.source.resolve.index import FileIndex
from denpex.source.syntax.parse import ParsedSource, walk


def torch_alias(ix: FileIndex) -> str:
    found = ix.imports.items_for("torch")
    return found[0] if found else "torch"


def replace_node(ix: FileIndex, node: Node, new_text: str) -> TextEdit:
    sl, sc = ix.src.start(node)
    el, ec = ix.src.end(node)
    return TextEdit(sl, sc, el, ec, new_text)


def insert_at(line: int, col: int, text: str) -> TextEdit:
    return TextEdit(line, col, line, col, text)


def _has_multiline_string(node: Node) -> bool:
    return any(n.type == "string" and n.start_point[0] != n.end_point[0] for n in walk(node))


def rows_text(ix: FileIndex, first: int, last: int, old_indent: str, new_indent: str) -> str:
    """Whole rows first..last re-indented from old_indent to new_indent (no trailing newline)."""
    out: list[str] = []
    for row in range(first, last + 1):
        line = ix.src.line_text(row)
        stripped = line[len(old_indent):] if line.startswith(old_indent) else line.lstrip()
        out.append((new_indent + stripped) if stripped.strip() else "")
    return "\n".join(out)


def statement_lines(ix: FileIndex, stmt: Node, new_indent: str) -> str | None:
    """The statement's whole rows (with a trailing comment) re-indented to `new_indent`, ending with a
    newline; None if it does not own its rows or contains a multi-line string."""
    if _has_multiline_string(stmt) or not owns_lines(ix, stmt):
        return None
    return rows_text(ix, stmt.start_point[0], stmt.end_point[0], ix.src.indent_of(stmt), new_indent) + "\n"


def same_row_block(stmt: Node) -> bool:
    """`with x: stmt` / `if c: stmt`: the statement shares its row with the compound statement header."""
    parent = stmt.parent
    return parent is not None and parent.type == "block" and parent.parent is not None and (
        parent.parent.start_point[0] == stmt.start_point[0]
    )


def owns_lines(ix: FileIndex, stmt: Node) -> bool:
    """Only whitespace before the statement on its first row, nothing but a comment after it on its last,
    and not on the header row of its block."""
    src = ix.src
    line = src.line_text(stmt.start_point[0])
    _sl, sc = src.start(stmt)
    if line[:sc].strip() or same_row_block(stmt):
        return False
    nxt = stmt.next_sibling
    return not (nxt is not None and nxt.start_point[0] == stmt.end_point[0] and nxt.type != "comment")


def row_end(ix: FileIndex, row: int) -> tuple[int, int]:
    return row, len(ix.src.line_text(row))


def delete_statement(ix: FileIndex, stmt: Node) -> TextEdit | None:
    """Delete a statement's whole rows; a lone statement in a block becomes `pass`."""
    if not owns_lines(ix, stmt):
        return None
    parent = stmt.parent
    siblings = [c for c in parent.named_children if c.type != "comment"] if parent is not None else []
    first, last = stmt.start_point[0], stmt.end_point[0]
    if parent is not None and parent.type == "block" and len(siblings) == 1:
        return TextEdit(first, len(ix.src.indent_of(stmt)), *row_end(ix, last), "pass")
    end_line = last + 1
    if end_line >= len(ix.src.line_starts):
        if first == 0:
            return TextEdit(first, 0, *row_end(ix, last), "")
        return TextEdit(first - 1, len(ix.src.line_text(first - 1)), *row_end(ix, last), "")
    return TextEdit(first, 0, end_line, 0, "")


def delete_rows(ix: FileIndex, first: Node, last: Node) -> TextEdit | None:
    """Delete the whole rows of the sibling statements first..last (one block); when they are all the block
    holds, they become `pass`."""
    if not owns_lines(ix, first) or not owns_lines(ix, last) or first.parent is None or first.parent != last.parent:
        return None
    parent = first.parent
    siblings = [c for c in parent.named_children if c.type != "comment"]
    inside = [c for c in siblings if first.start_byte <= c.start_byte and c.end_byte <= last.end_byte]
    if parent.type == "block" and len(inside) == len(siblings):
        return TextEdit(first.start_point[0], len(ix.src.indent_of(first)), *row_end(ix, last.end_point[0]), "pass")
    if first.id == last.id:
        return delete_statement(ix, first)
    r0, r1 = first.start_point[0], last.end_point[0]
    if r1 + 1 >= len(ix.src.line_starts):
        if r0 == 0:
            return TextEdit(r0, 0, *row_end(ix, r1), "")
        return TextEdit(r0 - 1, len(ix.src.line_text(r0 - 1)), *row_end(ix, r1), "")
    return TextEdit(r0, 0, r1 + 1, 0, "")


def replace_statement_rows(ix: FileIndex, stmt: Node, text: str) -> TextEdit | None:
    """Replace a statement's whole rows with `text` (already indented, no trailing newline)."""
    if not owns_lines(ix, stmt) or _has_multiline_string(stmt):
        return None
    return TextEdit(stmt.start_point[0], 0, *row_end(ix, stmt.end_point[0]), text)


def insert_before_statement(ix: FileIndex, stmt: Node, lines: Sequence[str]) -> TextEdit:
    indent = ix.src.indent_of(stmt)
    text = "".join(f"{indent}{ln}\n" if ln else "\n" for ln in lines)
    return insert_at(stmt.start_point[0], 0, text)


def insert_after_statement(ix: FileIndex, stmt: Node, lines: Sequence[str], indent: str | None = None) -> TextEdit:
    ind = ix.src.indent_of(stmt) if indent is None else indent
    text = "".join(f"{ind}{ln}\n" if ln else "\n" for ln in lines)
    row = stmt.end_point[0] + 1
    if row >= len(ix.src.line_starts) or (row == len(ix.src.line_starts) - 1 and not ix.src.data.endswith(b"\n")):
        line = ix.src.line_text(stmt.end_point[0])
        return insert_at(stmt.end_point[0], len(line), "\n" + text.rstrip("\n"))
    return insert_at(row, 0, text)


def move_statement_after(ix: FileIndex, stmt: Node, after: Node) -> list[TextEdit] | None:
    body = statement_lines(ix, stmt, ix.src.indent_of(after))
    delete = delete_statement(ix, stmt)
    if body is None or delete is None:
        return None
    insert = insert_after_statement(ix, after, [body.rstrip("\n")], indent="")
    return [delete, insert]


def move_statement_before(ix: FileIndex, stmt: Node, before: Node) -> list[TextEdit] | None:
    body = statement_lines(ix, stmt, ix.src.indent_of(before))
    delete = delete_statement(ix, stmt)
    if body is None or delete is None:
        return None
    return [insert_at(before.start_point[0], 0, body), delete]


def guard_statement(ix: FileIndex, stmt: Node) -> TextEdit | None:
    """Wrap a statement in `if not torch.cuda.is_current_stream_capturing():`."""
    indent = ix.src.indent_of(stmt)
    body = statement_lines(ix, stmt, indent + "    ")
    if body is None:
        return None
    head = f"{indent}if not {torch_alias(ix)}.cuda.is_current_stream_capturing():\n"
    return TextEdit(stmt.start_point[0], 0, *row_end(ix, stmt.end_point[0]), head + body.rstrip("\n"))


def fix(title: str, safety: Safety, edits: Iterable[TextEdit] | None, *, in_place: bool = False) -> Fix | None:
    """A fix of sorted, non-overlapping edits (None when there are none). `in_place`: it edits only the offending
    code, so it may be offered where that code sits in another file than the capture."""
    if edits is None:
        return None
    es = tuple(sorted(edits))
    if not es:
        return None
    for i in range(1, len(es)):
        prev, cur = es[i - 1], es[i]
        if (cur.start_line, cur.start_col) < (prev.end_line, prev.end_col):
            return None  # overlapping edits: the code is too unusual for a clean fix
    return Fix(title, safety, es, in_place)


# ---- applying ------------------------------------------------------------------------------------------------
def _offsets(src: ParsedSource, text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits (code-point positions) to text."""
    starts = [0]
    pos = text.find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)

    def off(line: int, col: int) -> int:
        if line >= len(starts):
            return len(text)
        return min(starts[line] + col, len(text))

    spans = sorted(((off(e.start_line, e.start_col), off(e.end_line, e.end_col), e.new_text) for e in edits),
                   key=lambda s: (s[0], s[1]))
    for i in range(1, len(spans)):
        if spans[i][0] < spans[i - 1][1]:
            raise DenpexError("overlapping fix edits")
    out = text
    for start, end, new in reversed(spans):
        out = out[:start] + new + out[end:]
    return out
