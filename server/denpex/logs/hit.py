"""What the matcher reports for one signature on one line: its own module, so that the matcher and the
truncated-line table (logs.truncated), which the matcher asks and which makes hits too, do not import each
other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from denpex.rulebook import CodeEntry, Signature

if TYPE_CHECKING:
    from denpex.logs.truncated import Repair


@dataclass(frozen=True)
class Hit:
    signature: Signature
    start: int  # character offset of the match in the checked text
    end: int
    entry: CodeEntry | None = None  # the status code a table signature named
    repair: Repair | None = None  # found on a line that is not whole (cut, wrapped, interleaved): logs.truncated
