"""Known-good control: the first line before the failure that a healthy run does not have."""

from __future__ import annotations

import re
from pathlib import Path

from denpex.errors import DenpexError
from denpex.logs.attribution import strip_prefixes
from denpex.logs.normalise import clean, decode

# Things that differ between two runs of the same job and mean nothing.
_VOLATILE = re.compile(
    r"\d{4}-\d{2}-\d{2}[ T_]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"  # timestamps
    r"|\b[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+"  # glog headers
    r"|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
    r"|0x[0-9a-fA-F]+"  # addresses
    r"|\b(?:pid|PID|tid)[ =:]*\d+"
    r"|\d+(?:\.\d+)?(?:e[-+]?\d+)?"  # any number: steps, losses, sizes
)


def normalise_for_compare(text: str) -> str:
    return _VOLATILE.sub("#", strip_prefixes(clean(text))).strip()




def first_divergence(failing: str | Path, control: str | Path, until_line: int) -> tuple[int, str] | None:
    """First line (1-based, before until_line) of `failing` whose normalised form `control` lacks."""
    seen: set[int] = set()
    try:
        with open(control, "rb") as fh:
            for raw in fh:
                seen.add(hash(normalise_for_compare(decode(raw[:4096]))))
    except OSError as exc:
        raise DenpexError(f"{control}: cannot read control log: {exc.strerror or exc}") from None
    try:
        with open(failing, "rb") as fh:
            for no, raw in enumerate(fh, start=1):
                if no >= until_line:
                    break
                norm = normalise_for_compare(decode(raw[:4096]))
                if norm and hash(norm) not in seen:
                    return no, clean(decode(raw[:4096]))
    except OSError as exc:
        raise DenpexError(f"{failing}: cannot read: {exc.strerror or exc}") from None
    return None
