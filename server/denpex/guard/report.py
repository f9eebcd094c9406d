"""What the guard says: one line per finding, in the rule book's words, to stderr; and the exception that
refuses a replay. `denpex diagnose` of a guarded run's output names the rule from these lines."""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass

# The rule book's codes for the rules the guard reports (tests/guard/test_report.py checks them against
# rules/); kept here because the guard runs inside the user's program with nothing of Denpex but itself.
CODES: dict[str, str] = {
    "replay-rebound-static-input": "DPX300",
    "replay-freed-input": "DPX301",
    "replay-output-kept-without-clone": "DPX302",
    "replay-frozen-python-scalar": "DPX303",
    "replay-python-side-effects": "DPX304",
    "replay-shape-change": "DPX305",
    "replay-differs-from-eager": "DPX308",
    "replay-frozen-branch": "DPX310",
}

PREFIX = "denpex-guard"


class GuardError(RuntimeError):
    """A replay the guard refused: it would have read freed or moved memory."""


GuardError.__module__ = "denpex.guard"  # tracebacks print the public name


@dataclass(frozen=True)
class Finding:
    rule: str
    message: str

    def line(self) -> str:
        return f"{self.rule} ({CODES[self.rule]}): {self.message}"


class Reporter:
    """Says each finding once (by key), keeps them for the summary and the pytest plugin."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._seen: set[object] = set()
        self._lock = threading.Lock()

    def report(self, finding: Finding, key: object) -> bool:
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            self.findings.append(finding)
        say(finding.line())
        return True

    def refuse(self, finding: Finding, key: object) -> None:
        """Say it, then stop the replay: the exception's text is the same line."""
        self.report(finding, key)
        raise GuardError(finding.line())


def say(text: str) -> None:
    rank = os.environ.get("RANK")
    # torchrun's own prefixes are added by its log redirection when asked; a plain stderr line gets ours
    tag = f"[rank{rank}]: " if rank is not None and os.environ.get("WORLD_SIZE", "1") != "1" else ""
    try:
        sys.stderr.write(f"{tag}{PREFIX}: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # a closed stderr must not turn a check into a crash


def describe(shape: tuple[int, ...], dtype: object) -> str:
    """float32[8, 256]"""
    name = str(dtype).removeprefix("torch.")
    return f"{name}[{', '.join(str(d) for d in shape)}]"
