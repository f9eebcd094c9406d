"""Open documents: what kind each is, its analysed state, and position conversion.

Positions inside Denpex are 0-based lines and code-point columns; LSP positions use the
negotiated encoding (UTF-16 unless the client offered otherwise). Conversions clamp to the
document so that a stale or out-of-range position never raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from denpex.lsp.kinds import LOG_LANGUAGES, LOG_SUFFIXES, PY_SUFFIXES, Kind, kind_of, path_of
from denpex.source.model import SourceFinding

__all__ = ["LOG_LANGUAGES", "LOG_SUFFIXES", "PY_SUFFIXES", "DocState", "DocumentStore", "Kind", "contains",
           "from_lsp_position", "kind_of", "overlaps", "path_of", "to_lsp_position", "to_lsp_range"]

@dataclass
class DocState:
    uri: str
    kind: Kind
    version: int | None = None
    analysed_version: int | None = None
    settings_generation: int = -1
    findings: list[SourceFinding] = field(default_factory=list)
    diagnostics: list[types.Diagnostic] = field(default_factory=list)
    log_findings: list[dict[str, Any]] = field(default_factory=list)  # log documents
    log_diagnosis: dict[str, Any] | None = None
    pending: asyncio.Task[None] | None = None
    notebook: str | None = None  # a notebook cell: the notebook's URI (see lsp/notebooks.py)


class DocumentStore:
    def __init__(self) -> None:
        self.docs: dict[str, DocState] = {}

    def get(self, uri: str) -> DocState | None:
        return self.docs.get(uri)

    def open(self, uri: str, kind: Kind, version: int | None) -> DocState:
        st = DocState(uri, kind, version)
        self.docs[uri] = st
        return st

    def close(self, uri: str) -> DocState | None:
        st = self.docs.pop(uri, None)
        if st is not None and st.pending is not None:
            st.pending.cancel()
        return st


def to_lsp_position(lines: Sequence[str], codec: PositionCodec, line: int, col: int) -> types.Position:
    """Code-point (line, col) -> client Position, clamped to the document."""
    if not lines:
        return types.Position(line=0, character=0)
    if line >= len(lines):
        last = len(lines) - 1
        return types.Position(line=last, character=codec.client_num_units(lines[last].rstrip("\r\n")))
    line = max(line, 0)
    text = lines[line].rstrip("\r\n")
    col = min(max(col, 0), len(text))
    return codec.position_to_client_units(lines, ServerTextPosition(line, col))


def to_lsp_range(lines: Sequence[str], codec: PositionCodec, sl: int, sc: int, el: int, ec: int) -> types.Range:
    start = to_lsp_position(lines, codec, sl, sc)
    end = to_lsp_position(lines, codec, el, ec)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)


def from_lsp_position(lines: Sequence[str], codec: PositionCodec, pos: types.Position) -> tuple[int, int] | None:
    """Client Position -> code-point (line, col); None when the line is outside the document."""
    if pos.line < 0 or pos.line >= len(lines) or pos.character < 0:
        return None
    p = codec.position_from_client_units(lines, types.Position(line=pos.line, character=pos.character))
    return p.line, p.character


def contains(rng: types.Range, pos: types.Position) -> bool:
    s, e, p = (rng.start.line, rng.start.character), (rng.end.line, rng.end.character), (pos.line, pos.character)
    return s <= p <= e


def overlaps(a: types.Range, b: types.Range) -> bool:
    a0, a1 = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b0, b1 = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a0 <= b1 and b0 <= a1
