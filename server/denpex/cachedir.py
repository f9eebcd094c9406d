"""Where Denpex keeps what saves a start (the parsed rule book, the prefilter's keys, the language
server's first answer): ``$DENPEX_CACHE_DIR``, else ``$XDG_CACHE_HOME/denpex``, else
``~/.cache/denpex``; ``DENPEX_CACHE_DIR=`` (empty) turns caching off.

It imports nothing of Denpex's: the language server's fast start reads it before anything loads.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path | None:
    explicit = os.environ.get("DENPEX_CACHE_DIR")
    if explicit is not None:
        return Path(explicit) if explicit else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "denpex"
