"""What a document is (Python, a log, anything else) and where it is on disk, from its URI.
Free of lsprotocol, so the start-up path (boot.py) can use it."""

from __future__ import annotations

from enum import Enum
from pathlib import PurePath

from pygls import uris

LOG_SUFFIXES = (".log", ".out", ".err")
LOG_LANGUAGES = frozenset({"log", "plaintext", "text", "Log"})
PY_SUFFIXES = (".py", ".pyi")


class Kind(Enum):
    PYTHON = "python"
    LOG = "log"
    OTHER = "other"


def kind_of(uri: str, language_id: str | None) -> Kind:
    name = PurePath(uris.to_fs_path(uri) or uri).name.lower()
    if language_id == "python" or name.endswith(PY_SUFFIXES):
        return Kind.PYTHON
    if name.endswith(LOG_SUFFIXES) or (language_id or "") in LOG_LANGUAGES:
        return Kind.LOG
    return Kind.OTHER


def path_of(uri: str) -> str | None:
    """Filesystem path of a `file:` URI; None for `untitled:` and other schemes."""
    try:
        return uris.to_fs_path(uri)
    except Exception:
        return None
