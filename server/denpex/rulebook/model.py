"""Typed view of a rule file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["initiating", "collateral", "context"]
Severity = Literal["error", "warning", "info"]


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
    verified_on: tuple[dict[str, str], ...] = field(default=())

    @property
    def has_log_side(self) -> bool:
        return bool(self.signatures) or self.refine_code is not None or self.refine_context is not None

    def verify_command(self) -> str:
        return self.verify.replace("{rule}", self.id)
