"""A per-user cache of what every run would otherwise rebuild: the parsed built-in rule book (so a
run does not re-read 100 YAML files) and the log prefilter's keys.

Parsing the shipped rules costs about 45 ms of every start (YAML, then the typed view); loading
them back from a pickle costs about 2 ms. The cache is keyed by everything the parsed rules depend
on: the package version, the Python version, and the size and modification time of every rule
file and of the modules that build Rule objects. Any failure to read or write it falls back to
parsing, silently: the cache only ever saves time. Users' own rule folders are never cached.

Where: denpex.cachedir.cache_dir() (``DENPEX_CACHE_DIR=``, empty, turns it off).
"""

from __future__ import annotations

import os
import pickle
import sys
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from denpex.cachedir import cache_dir

T = TypeVar("T")

_MODULES = ("model.py", "loader.py", "codes.py", "safety.py")
MAX_INSTALLS = 8  # entries of one kind kept (one per install that wrote it)


def _key(files: Sequence[Path], extra: bytes = b"") -> str:
    from denpex import __version__

    parts = [__version__, sys.version, extra.hex()]
    here = Path(__file__).resolve().parent
    for p in [*files, *(here / m for m in _MODULES)]:
        st = p.stat()
        parts.append(f"{p}\0{st.st_size}\0{st.st_mtime_ns}")  # the full path: two checkouts never share
    stamp = "\0".join(parts).encode()
    # two CRCs, not hashlib: importing hashlib (OpenSSL) costs more than this whole load saves
    # in a small file's run; the key only has to change when an input changes
    return f"{zlib.crc32(stamp):08x}{zlib.crc32(stamp[::-1]):08x}{len(stamp):x}"


def cached(name: str, files: Sequence[Path], build: Callable[[], T], extra: bytes = b"") -> T:
    """build(), or what an earlier build() with the same inputs (files, and extra bytes) saved."""
    where = cache_dir()
    if where is None:
        return build()
    # one entry per install (the folder of the first input): a newer entry replaces that install's
    # older one, never another checkout's
    home = str(files[0].resolve().parent) if files else ""
    tag = f"{name}-{zlib.crc32(home.encode()):08x}"
    try:
        path = where / f"{tag}-{_key(files, extra)}.pickle"
    except OSError:
        return build()
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)  # type: ignore[no-any-return]
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass
    value = build()
    try:
        import tempfile

        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=f".{name}-", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # readers see the old file or the whole new one
        for old in where.glob(f"{tag}-*.pickle"):
            if old != path:
                old.unlink(missing_ok=True)
        # installs that are gone leave their entries: keep the newest few of each kind
        others = sorted(where.glob(f"{name}-*.pickle"), key=lambda q: q.stat().st_mtime, reverse=True)
        for old in others[MAX_INSTALLS:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
    return value
