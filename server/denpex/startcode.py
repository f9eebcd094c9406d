"""The methods that dataclasses writes for each class, kept compiled between runs of a one-shot command.

@dataclass writes every class's __init__, __repr__, __eq__ (and, frozen, __setattr__, __hash__ ...) as
source text and runs exec() on it at import: 135 texts on `denpex diagnose`'s path, whose parse and
compile were 16% of the instructions of a small log's whole run (callgrind: 90 M of 557 M). Here the
dataclasses module's exec gets each text's code object from a cache (marshal, keyed by the exact text)
and runs that: the same code (compiled as exec() compiles it there, with no __future__ flags), the same
classes, without the compile. A text not in the cache is compiled and the cache written once at the end.

The cache file lives in denpex.cachedir.cache_dir(), one per Python build (marshal's format is its own);
any failure to read or write it falls back to plain exec(), silently. Installed for one-shot commands
only (cli._ONE_SHOT): the language server pays its start once.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib
from pathlib import Path
from types import CodeType
from typing import Any

MAX_TEXTS = 2000  # past this many in the file, only the texts of this run are kept (old classes' go)

_codes: dict[str, CodeType] = {}
_used: set[str] = set()
_added = False
_path: Path | None = None


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    global _added
    if type(source) is str:
        _used.add(source)
        code = _codes.get(source)
        if code is None:
            # dont_inherit: compiled as dataclasses' own exec() compiles it (that module has no __future__
            # imports; this one's would turn the generated annotations into strings)
            code = _codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
            _added = True
        source = code
    exec(source, globals, locals)  # dataclasses' own generated code, run as it runs it


def _cache_path() -> Path | None:
    from denpex.cachedir import cache_dir

    where = cache_dir()
    if where is None:
        return None
    build = f"{sys.version}\0{sys.implementation.cache_tag}".encode()
    return where / f"dataclass-code-{zlib.crc32(build):08x}.marshal"


def install() -> None:
    """Give dataclasses the cached exec (before the modules that define dataclasses are imported)."""
    global _path
    import dataclasses

    if "exec" in vars(dataclasses):  # installed already, or a dataclasses module not like 3.11-3.13's
        return
    _path = _cache_path()
    if _path is not None:
        try:
            with open(_path, "rb") as fh:
                got = marshal.load(fh)
            if isinstance(got, dict):
                _codes.update((k, v) for k, v in got.items() if isinstance(k, str) and isinstance(v, CodeType))
        except (OSError, EOFError, ValueError, TypeError):
            pass
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # the module's global, ahead of the builtin


def save() -> None:
    """Write the cache where this run compiled a text it did not hold."""
    global _added
    if not _added or _path is None:
        return
    _added = False
    try:
        _path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _path.with_name(f".{_path.name}.{os.getpid()}.tmp")
        keep = _codes if len(_codes) <= MAX_TEXTS else {k: v for k, v in _codes.items() if k in _used}
        with open(tmp, "wb") as fh:
            marshal.dump(keep, fh)
        os.replace(tmp, _path)  # readers see the old file or the whole new one
    except (OSError, ValueError):
        pass
