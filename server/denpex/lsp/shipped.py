"""The answer to `initialize` shipped with the package, for a start with an empty per-user cache.

pygls' answer depends on the client's capabilities only through a few values (pygls 2.1's
ServerCapabilitiesBuilder and handlers/initialize.py): the position encoding pygls picks from
`general.positionEncodings`, whether `notebookDocument` is declared, whether the client pulls
diagnostics (`textDocument.diagnostic`), and `textDocument.synchronization.willSave` /
`willSaveWaitUntil` (absent or given). `initialize_answers.json` holds pygls' answer for every
combination of those, made by running the server in-process (`python -m denpex.lsp.shipped_build --write`).

The table is used only while it belongs to this code: its stamp covers the denpex, pygls and
lsprotocol versions and the content of every module of this package that can change what pygls
answers. Any other state (a stale table, a value of a type a real client does not send) answers
nothing early, so pygls answers as without it. boot.py still compares pygls' own answer with the
early one: a payload malformed deeper than what `projection` checks (pygls refuses it) is answered
early and then logged as an error. tests/lsp/test_boot_shipped.py proves the table equal to pygls' answers for real
clients' payloads (pytest-lsp's recorded VS Code, Neovim and Emacs capabilities), and that changing
any other capability does not change pygls' answer.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

Json = dict[str, object]

HERE = Path(__file__).resolve().parent
ANSWERS = HERE / "initialize_answers.json"
# the early part and this table do not shape pygls' answer; a change to them keeps the table
_NOT_STAMPED = frozenset({"boot.py", "shipped.py", "shipped_build.py"})
ENCODINGS = ("utf-8", "utf-16", "utf-32")  # pygls' _SUPPORTED_ENCODINGS

_table: dict[str, Any] | None = None
_loaded = False


def _dist_version(module: str) -> str | None:
    """`module`'s installed version from its dist-info folder's name (importlib.metadata costs more
    than the whole early answer)."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return None
    site = Path(spec.origin).resolve().parent.parent
    found = sorted(site.glob(f"{module}-*.dist-info"))
    if len(found) != 1:
        return None  # none, or two installs side by side: which one is loaded is not told here
    return found[0].name[len(module) + 1:-len(".dist-info")]


def stamp(package: Path = HERE) -> str | None:
    """What the table depends on besides the client: versions, and the content of the server's modules."""
    from denpex import __version__

    versions = [_dist_version("pygls"), _dist_version("lsprotocol")]
    if None in versions:
        return None
    crc = zlib.crc32("\0".join([__version__, *map(str, versions)]).encode())
    files = sorted(f for f in [*package.glob("*.py"), *package.glob("handlers/*.py")]
                   if not (f.parent == package and f.name in _NOT_STAMPED))
    for f in files:
        try:
            data = f.read_bytes()
        except OSError:
            return None
        crc = zlib.crc32(data, zlib.crc32(f.relative_to(package).as_posix().encode() + b"\0", crc))
    return f"{crc:08x}-{len(files)}"


def _get(node: object, *path: str) -> object:
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def projection(caps: object) -> str | None:
    """The values of the client's capabilities that pygls' answer depends on, as a table key; None
    for values no real client sends (pygls might refuse them: the early part then answers nothing)."""
    if not isinstance(caps, dict):
        return None
    for section in ("general", "textDocument", "notebookDocument", "workspace", "window"):
        if caps.get(section) is not None and not isinstance(caps.get(section), dict):
            return None
    encodings = _get(caps, "general", "positionEncodings")
    if encodings is None:
        encoding = "utf-16"
    elif isinstance(encodings, list) and all(isinstance(e, str) for e in encodings):
        encoding = next((e for e in encodings if e in ENCODINGS), "utf-16")
    else:
        return None
    text = caps.get("textDocument")
    if isinstance(text, dict) and any(v is not None and not isinstance(v, (dict, list)) for v in text.values()):
        return None  # a capability object (Neovim 0.9 sends one as a list, which pygls reads as empty)
    notebook = caps.get("notebookDocument")
    if notebook is not None and not isinstance(_get(notebook, "synchronization"), dict):
        return None  # `synchronization` is required there
    pull = _get(caps, "textDocument", "diagnostic")
    if pull is not None and not isinstance(pull, dict):
        return None
    sync = _get(caps, "textDocument", "synchronization")
    if sync is not None and not isinstance(sync, dict):
        return None
    will_save, will_save_wait = _get(sync, "willSave"), _get(sync, "willSaveWaitUntil")
    if not (isinstance(will_save, (bool, type(None))) and isinstance(will_save_wait, (bool, type(None)))):
        return None
    return key(encoding, notebook is not None, pull is not None, will_save, will_save_wait)


def key(encoding: str, notebook: bool, pull: bool, will_save: bool | None, will_save_wait: bool | None) -> str:
    return json.dumps([encoding, notebook, pull, will_save, will_save_wait])


def _load_table() -> dict[str, Any] | None:
    global _table, _loaded
    if not _loaded:
        _loaded = True
        try:
            data = json.loads(ANSWERS.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if isinstance(data, dict) and data.get("stamp") == stamp() and isinstance(data.get("answers"), dict):
            _table = data
    return _table


def answer(params: Json) -> Json | None:
    """pygls' answer to this `initialize`, from the shipped table; None where the table does not know it."""
    k = projection(params.get("capabilities"))
    if k is None:
        return None
    table = _load_table()
    if table is None:
        return None
    i = table["answers"].get(k)
    results = table.get("results")
    if not isinstance(i, int) or not isinstance(results, list) or not 0 <= i < len(results):
        return None
    result = results[i]
    return result if isinstance(result, dict) else None
