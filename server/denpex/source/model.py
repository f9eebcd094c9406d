"""Public result types of the source analyser (stable: the language server consumes them).

All positions are 0-based lines and 0-based *code-point* columns (converting to UTF-16 for the LSP is the
server's job). End positions are exclusive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "info"]
Safety = Literal["safe", "unsafe"]


@dataclass(frozen=True, order=True)
class TextEdit:
    """Replace [start, end) with new_text. 0-based lines, code-point columns."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int
    new_text: str


@dataclass(frozen=True)
class Fix:
    title: str
    safety: Safety
    edits: tuple[TextEdit, ...]
    in_place: bool = False  # edits only the offending code (may land in a called function's file)


@dataclass(frozen=True)
class CaptureSite:
    """Where the capture that reaches a finding opens (0-based line)."""

    path: str
    line: int
    kind: str  # "graph" | "capture_begin" | "graphed_callables" | "compile" | "wrapper"


@dataclass(frozen=True)
class CallStep:
    """One call on the way from a capture to a finding: where the call is, and what it reached."""

    path: str
    line: int
    col: int
    label: str  # `step`, `self.model -> Net.forward`


@dataclass(frozen=True)
class SourceFinding:
    rule: str  # rule id, e.g. "capture-item-sync"
    code: str  # rule code, e.g. "DPX101"
    severity: Severity
    message: str
    path: str
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    hazard: str  # detector name (rule's source.hazards)
    capture_site: CaptureSite | None
    fixes: tuple[Fix, ...] = ()
    suppression: Fix | None = None
    via: tuple[str, ...] = field(default=())  # call chain from the capture site, outermost first
    call_path: tuple[CallStep, ...] = ()  # the calls followed from the capture site to here, with positions
