"""The methods that dataclasses writes for each class, and re's patterns, kept compiled between starts.

@dataclass writes every class's __init__, __repr__, __eq__ (and, frozen, __setattr__, __hash__ ...) as
source text and runs exec() on it at import: 135 texts on `denpex diagnose`'s path, whose parse and
compile were 16% of the instructions of a small log's whole run (callgrind: 90 M of 557 M). Here the
dataclasses module's exec gets each text's code object from a cache (marshal, keyed by the exact text)
and runs that: the same code (compiled as exec() compiles it there, with no __future__ flags), the same
classes, without the compile. A text not in the cache is compiled and the cache written once at the end.

The same for the standard library's regular expressions: `re.compile` parses each pattern and generates
its matcher code in Python (re._parser, re._compiler) on every start, 87 patterns and about 8 ms of a
small log's run (the modules' patterns, argparse's, json's). re._compiler.compile is replaced by one that
takes the arguments it would pass to _sre.compile (the final flags, the code, the groups) from a cache
keyed by the pattern, its type and the flags, and passes them: the same Pattern objects, without the
parse. A pattern not in the cache is parsed and compiled as re._compiler.compile does it (the same ten
lines of 3.11-3.13, which this installs on only) and the cache written at the end. The `regex` package's
patterns are not cached: they are few on this path, and compiled where first used.

The cache files live in denpex.cachedir.cache_dir(), one per Python build (marshal's format and re's code
are its own); any failure to read or write them falls back to plain exec() and re's own compile,
silently. Installed by the one-shot commands (cli._ONE_SHOT: diagnose, merge) and by the language
server's early start-up (lsp/boot.py, up to its first diagnostics; re's own compile is put back before
pygls is imported).

Where the per-user file is missing (a first start after an install, a fresh DENPEX_CACHE_DIR), the
copy shipped with the package is read: denpex/_startcode/, written at build time by hatch_build.py
(python -m denpex.startcode_build, the language server's early path run on a small document; git
ignores it). It names the Python build it was made by, in its file name and inside (dataclasses'
code: the bytecode magic and cache tag, as a .pyc; re's: the same build string as the per-user file),
and a file of another build is not read. Texts and patterns are exact keys, so a shipped file made
from older source only misses: what it lacks is compiled and written to the per-user cache. Without
it (a build that could not run the early path) a start is as before; DENPEX_STARTCODE_SHIPPED=0 does
not read it.
"""

from __future__ import annotations

import array
import contextlib
import marshal
import os
import sys
import zlib
from pathlib import Path
from types import CodeType
from typing import Any, Literal

MAX_TEXTS = 2000  # past this many in the file, only the texts of this run are kept (old classes' go)
MAX_PATTERNS = 1000  # re patterns kept in their file (the newest)

_codes: dict[str, CodeType] = {}
_used: set[str] = set()
_added = False
_path: Path | None = None

# re: (pattern, flags) -> the arguments of _sre.compile after the pattern, the code as its machine words
# (bytes: a list of 8,000 ints took marshal 2.2 ms to read, the words 0.3 ms; see _re_compile)
ReArgs = tuple[int, bytes, int, dict[str, int], tuple[str | None, ...]]
_re_args: dict[tuple[str | bytes, int], ReArgs] = {}
_re_added = False
_re_path: Path | None = None
_RE_VERSIONS = ((3, 11), (3, 12), (3, 13))  # where re._compiler.compile is the code _re_compile follows
_RE_COMPILE: Any = None  # re's own compile, replaced by _re_compile
_WORD: Literal["I"] = "I"  # array's type of _sre's code words (installed only where its size is _sre.CODESIZE)
_WORD_SIZE = array.array(_WORD).itemsize


SHIPPED = Path(__file__).parent / "_startcode"  # hatch_build.py writes it (denpex.startcode_build)
SHIPPED_FORMAT = 1


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


def _re_compile(p: Any, flags: int = 0) -> Any:
    """re._compiler.compile(p, flags), its parse and code generation from the cache where held."""
    import _sre
    from re import _compiler, _parser  # type: ignore[attr-defined]

    global _re_added
    if (type(p) is not str and type(p) is not bytes) or type(flags) is not int or flags & _compiler.SRE_FLAG_DEBUG:
        return _RE_COMPILE(p, flags)  # a parsed pattern (re.Scanner), or a debug dump: re's own
    key = (p, flags)
    got = _re_args.get(key)
    if got is None:
        import warnings

        # re._compiler.compile's own steps (3.11-3.13), keeping what it hands to _sre.compile
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                parsed = _parser.parse(p, flags)
                code = _compiler._code(parsed, flags)
        except Exception:  # an invalid pattern: re's own compile raises (and warns) as it would
            return _RE_COMPILE(p, flags)
        if said:  # a pattern re warns about (a nested set, ...) is not cached: re's own compile warns again
            return _RE_COMPILE(p, flags)
        groupindex = parsed.state.groupdict
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for k, i in groupindex.items():
            indexgroup[i] = k
        try:
            words = array.array(_WORD, code).tobytes()
        except OverflowError:  # not one of _sre's code words: re's own compile says what is wrong
            return _RE_COMPILE(p, flags)
        got = _re_args[key] = (int(flags | parsed.state.flags), words, parsed.state.groups - 1,
                               dict(groupindex), tuple(indexgroup))
        _re_added = True
    final, words, groups, by_name, by_index = got
    # the code as a list of ints, as re hands it over; a fresh dict each time: the pattern keeps it
    return _sre.compile(p, final, memoryview(words).cast(_WORD).tolist(), groups, dict(by_name), by_index)


def _build(kind: str, shipped: bool = False) -> bytes:
    """What a file of `kind` is valid for. A shipped file of dataclasses' code names the bytecode format
    only (a .pyc's magic number and cache tag: any patch release of the build reads it); re's files, and
    the per-user ones, the exact build (re's code generation can change in a patch release)."""
    if kind == "dataclass-code" and shipped:
        from _frozen_importlib_external import MAGIC_NUMBER  # importlib.util's, without its import

        return f"{MAGIC_NUMBER.hex()}\0{sys.implementation.cache_tag}".encode()
    build = f"{sys.version}\0{sys.implementation.cache_tag}".encode()
    if kind != "dataclass-code":
        import _sre

        build += f"\0{_sre.MAGIC}\0{_sre.CODESIZE}\0{_sre.MAXREPEAT}\0{_sre.MAXGROUPS}".encode()
    return build


def _cache_path(kind: str = "dataclass-code") -> Path | None:
    from denpex.cachedir import cache_dir

    where = cache_dir()
    if where is None:
        return None
    return where / f"{kind}-{zlib.crc32(_build(kind)):08x}.marshal"


def shipped_path(kind: str, where: Path | None = None) -> Path:
    """The shipped file of `kind` for this Python build, in `where` (default SHIPPED)."""
    return (SHIPPED if where is None else where) / f"{kind}-{zlib.crc32(_build(kind, shipped=True)):08x}.marshal"


def _read_shipped(kind: str) -> Any:
    """The entries of the shipped file of `kind`, or None: missing, damaged, or of another build."""
    got = _read(shipped_path(kind))
    if (isinstance(got, dict) and got.get("format") == SHIPPED_FORMAT
            and got.get("build") == _build(kind, shipped=True) and isinstance(got.get("entries"), dict)):
        return got["entries"]
    return None


def write_shipped(where: Path) -> list[Path]:
    """The texts and patterns this run used, written as the package's shipped files (startcode_build)."""
    written = []
    for kind, entries in (("dataclass-code", {k: v for k, v in _codes.items() if k in _used}),
                          ("re-code", dict(_re_args))):
        if kind == "re-code" and _RE_COMPILE is None:
            continue  # re's own compile ran (another Python): nothing to ship
        path = shipped_path(kind, where)
        _write(path, {"format": SHIPPED_FORMAT, "build": _build(kind, shipped=True), "entries": entries})
        if path.is_file():
            written.append(path)
    return written


def _read(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    try:
        # loads of the whole file: marshal.load(fh) reads it a piece at a time (7 ms for 450 KB, not 0.7)
        return marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None


def _write(path: Path, value: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        data = marshal.dumps(value)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # readers see the old file or the whole new one
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _valid_re(k: Any, v: Any) -> bool:
    return (isinstance(k, tuple) and len(k) == 2 and type(k[0]) in (str, bytes) and type(k[1]) is int
            and isinstance(v, tuple) and len(v) == 5 and type(v[0]) is int and type(v[1]) is bytes
            and len(v[1]) % _WORD_SIZE == 0
            and type(v[2]) is int and type(v[3]) is dict and type(v[4]) is tuple)


def install(shipped: bool = True) -> None:
    """Give dataclasses the cached exec (before the modules that define dataclasses are imported). The
    per-user files are read, else (`shipped`, unless DENPEX_STARTCODE_SHIPPED=0) the package's."""
    global _path
    import dataclasses

    if "exec" in vars(dataclasses):  # installed already, or a dataclasses module not like 3.11-3.13's
        return
    shipped = shipped and os.environ.get("DENPEX_STARTCODE_SHIPPED") != "0"
    _path = _cache_path()
    got = _read(_path)
    if not isinstance(got, dict) and shipped:
        got = _read_shipped("dataclass-code")
    if isinstance(got, dict):
        _codes.update((k, v) for k, v in got.items() if isinstance(k, str) and isinstance(v, CodeType))
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # the module's global, ahead of the builtin
    _install_re(shipped)


def _install_re(shipped: bool) -> None:
    global _re_path, _RE_COMPILE
    import _sre
    from re import _compiler  # type: ignore[attr-defined]

    if (sys.version_info[:2] not in _RE_VERSIONS or _compiler.compile is _re_compile
            or array.array(_WORD).itemsize != _sre.CODESIZE):
        return
    _re_path = _cache_path("re-code")
    got = _read(_re_path)
    if not isinstance(got, dict) and shipped:
        got = _read_shipped("re-code")
    if _re_path is None and not isinstance(got, dict):
        return  # caching off and nothing shipped to read: re's own compile
    if isinstance(got, dict):
        _re_args.update((k, v) for k, v in got.items() if _valid_re(k, v))
    _RE_COMPILE = _compiler.compile
    _compiler.compile = _re_compile  # re._compile looks it up on each call


def save() -> None:
    """Write the caches where this run compiled a text or a pattern they did not hold."""
    global _added, _re_added
    if _added and _path is not None:
        _added = False
        _write(_path, _codes if len(_codes) <= MAX_TEXTS else {k: v for k, v in _codes.items() if k in _used})
    if _re_added and _re_path is not None:
        _re_added = False
        # a pattern built from data (a user's text) would grow the file run by run: past the bound
        # it starts again from this run's patterns
        _write(_re_path, _re_args if len(_re_args) <= MAX_PATTERNS else dict(list(_re_args.items())[-MAX_PATTERNS:]))
