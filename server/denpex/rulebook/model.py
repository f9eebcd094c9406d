"""Typed view of a rule file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["initiating", "collateral", "context"]
Severity = Literal["error", "warning", "info"]
GraphRelated = Literal["yes", "no", "depends"]


@dataclass(frozen=True)
class Signature:
    """One phrasing of one log message."""

    rule_id: str
    index: int
    role: Role
    anchor: str  # literal that every match contains; feeds the prefilter
    literal: str | None = None
    regex: str | None = None
    variant: str = ""
    ignore_case: bool = False
    wrapper: bool = False  # wraps the real message, which a later line of the same event names
    table_group: str | None = None  # "name" | "message" | "number": the group looked up in the rule's codes


@dataclass(frozen=True)
class CodeEntry:
    """One status code of a library's table (cudaError_t, CUresult, cublasStatus_t, ...)."""

    name: str
    number: int | None = None
    messages: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    since: str = ""
    meaning: str = ""
    fix: str = ""
    graph_related: GraphRelated | None = None
    asynchronous: bool = False

    def label(self) -> str:
        num = f" ({self.number})" if self.number is not None else ""
        msg = f": {self.messages[0]}" if self.messages else ""
        return f"{self.name}{num}{msg}"


@dataclass(frozen=True)
class Hint:
    """A note for a verdict whose line matches `regex`."""

    regex: str
    note: str
    graph_related: GraphRelated | None = None


@dataclass(frozen=True)
class SourceSide:
    hazards: tuple[str, ...]
    message: str
    invalid: str
    valid: str
    fixed: str | None


@dataclass(frozen=True)
class Rule:
    id: str
    code: str
    title: str
    family: str
    severity: Severity
    root_cause: str
    fix: str
    verify: str
    checklist: tuple[str, ...]
    references: tuple[str, ...]
    path: str
    eager_fallback: str = ""
    folklore: str = ""
    silent: bool = False
    asynchronous: bool = False
    signatures: tuple[Signature, ...] = ()
    log_match_examples: tuple[str, ...] = ()
    log_no_match_examples: tuple[str, ...] = ()
    source: SourceSide | None = None
    refine_parents: tuple[str, ...] = ()
    refine_code: str | None = None  # regex over the innermost user frame's source text
    refine_priority: int = 0
    refine_context: str | None = None  # regex over the lines just before the parent's line
    refine_phase: str | None = None  # "capture" | "replay": the phase the log puts the parent's failure in
    refine_frames: str | None = None  # regex over "path:function" of each frame of the parent's traceback
    graph_related: GraphRelated = "yes"
    in_capture: str = ""  # what capture changes about this failure
    generic: bool = False  # a broad family: a specific rule on the same line wins
    codes: tuple[CodeEntry, ...] = ()
    hints: tuple[Hint, ...] = ()
    implies_phase: str | None = None  # the error is raised only in this phase
    verified_on: tuple[dict[str, str], ...] = field(default=())

    @property
    def has_log_side(self) -> bool:
        return bool(self.signatures) or any(
            p is not None for p in (self.refine_code, self.refine_context, self.refine_phase, self.refine_frames)
        )

    def verify_command(self) -> str:
        text = self.verify.replace("{rule}", self.id)
        if self.asynchronous and "denpex run " in text and "--honest" not in text:
            # an asynchronous error is verified where CUDA reports it honestly (`denpex run --honest`
            # sets CUDA_LAUNCH_BLOCKING=1 and the rest, and prints them)
            text = text.replace("CUDA_LAUNCH_BLOCKING=1 denpex run ", "denpex run ", 1)
            text = text.replace("denpex run ", "denpex run --honest ", 1)
        return text
