"""Start-up over stdio: the first diagnostics before pygls and lsprotocol are imported.

Importing pygls costs ~300 ms, most of it lsprotocol's type module (`python -X importtime`), and an
editor waits for the answer to `initialize` before it opens a document. So `serve_stdio`:

1. reads the first messages itself (same framing bounds as the server's stdin, transport.BoundedStdin);
2. answers `initialize` with what pygls answered last time for the same client capabilities and the same
   server code (a small cache in denpex.cachedir.cache_dir()), else with the answer shipped with the
   package for this kind of client (denpex.lsp.shipped: the first start after an install); when neither
   knows it, nothing is answered early;
3. analyses the first Python document opened and publishes its diagnostics (push clients);
4. imports pygls and hands it the byte stream: everything read so far is replayed, so pygls sees the
   whole session from `initialize` on. pygls' own answer to `initialize` is not sent again; it is
   compared with the early one (a difference is logged as an error), and stored in the cache when the
   cache did not hold it.

The early part runs with denpex.startcode installed, as the one-shot commands do: dataclasses' generated
methods and re's patterns come from the per-user cache where it holds them (a warm start's first
diagnostics in about half the CPU: 75 dataclasses' texts compiled were ~50 ms of ~200). The cache is
written once the first diagnostics are out, and re's own compile is put back before pygls is imported,
so patterns the server compiles later (from users' data) are not kept forever. Where the per-user cache
is empty (a first start after an install), the copy shipped with the package is read (denpex/_startcode,
built by hatch_build.py), so that start is as warm. The cycle collector is off for the early part.

Anything unexpected (a first message that is not `initialize`, a frame that is not clean JSON-RPC,
any other method) ends the early part at once: pygls then handles it exactly as without this module.
`DENPEX_LSP_BOOT=0` turns the early part off.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from denpex.cachedir import cache_dir
from denpex.lsp.stdio import MAX_MESSAGE_BYTES, BoundedStdin, Readable

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

_CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")
_CONTENT_TYPE = "application/vscode-jsonrpc; charset=utf-8"
CACHE_ENTRIES = 16

Json = dict[str, object]

# What the early part did, logged (type Log) once pygls has taken over (handlers/initialized.py).
REPORT: list[str] = []


def frame(body: Json) -> bytes:
    data = json.dumps(body).encode("utf-8")
    return b"Content-Length: %d\r\nContent-Type: %s\r\n\r\n" % (len(data), _CONTENT_TYPE.encode()) + data


class Frames:
    """JSON-RPC messages read from a stream, every byte kept for the replay."""

    def __init__(self, raw: BoundedStdin) -> None:
        self.raw = raw
        self.consumed = bytearray()

    def next(self) -> Json | None:
        """The next message; None at a frame the early part leaves to pygls (or at end of input)."""
        length = None
        while True:
            line = self.raw.readline()
            self.consumed += line
            if not line.endswith(b"\n"):
                return None
            if line.strip() == b"":
                break
            m = _CONTENT_LENGTH.fullmatch(line)
            if m is not None and length is None:
                length = int(m.group(1))
            elif not line.startswith(b"Content-Type:"):
                return None
        if length is None or length > MAX_MESSAGE_BYTES:
            return None
        body = self.raw.read(length)
        self.consumed += body
        if len(body) != length:
            return None
        try:
            msg = json.loads(body)
        except ValueError:
            return None
        return msg if isinstance(msg, dict) and msg.get("jsonrpc") == "2.0" else None


class Replay:
    """`prefix` (the bytes the early part read), then the live stream: pygls reads the session whole."""

    def __init__(self, prefix: bytes, raw: Readable) -> None:
        self.prefix = bytes(prefix)
        self.raw = raw

    def readline(self, limit: int = -1) -> bytes:
        if self.prefix:
            cut = len(self.prefix) if limit < 0 else min(limit, len(self.prefix))
            nl = self.prefix.find(b"\n", 0, cut)
            end = nl + 1 if nl >= 0 else cut
            out, self.prefix = self.prefix[:end], self.prefix[end:]
            if out.endswith(b"\n") or (0 <= limit <= len(out)):
                return out
            return out + self.raw.readline(limit - len(out) if limit >= 0 else -1)
        return self.raw.readline(limit)

    def read(self, n: int) -> bytes:
        if self.prefix:
            out, self.prefix = self.prefix[:n], self.prefix[n:]
            if len(out) < n:
                out += self.raw.read(n - len(out))
            return out
        return self.raw.read(n)


class Out:
    """stdout for the early part and then for pygls. pygls' answer to an `initialize` already answered
    early is held back (and checked); its first answer is cached for the next start."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.lock = threading.Lock()
        self.init_id: object = None
        self.answered: Json | None = None  # the result sent early
        self.cached: Json | None = None  # what the cache held for this client
        self.cache_path: Path | None = None
        self.source = ""  # where the early answer came from
        self.pending = False  # pygls' answer to `initialize` is still to come

    def send(self, body: Json) -> None:
        """A message of the early part's own (never held back)."""
        with self.lock:
            self.raw.write(frame(body))
            self.raw.flush()

    def write(self, data: bytes) -> None:
        if self.pending:
            data = self._initialize_answer(data)
        if data:
            with self.lock:
                self.raw.write(data)
                self.raw.flush()

    def flush(self) -> None:
        with self.lock:
            self.raw.flush()

    def close(self) -> None:
        self.raw.close()

    def _initialize_answer(self, data: bytes) -> bytes:
        _, sep, body = data.partition(b"\r\n\r\n")
        try:
            msg = json.loads(body) if sep else None
        except ValueError:
            return data
        if not isinstance(msg, dict) or "method" in msg or msg.get("id") != self.init_id:
            return data
        result = msg.get("result")
        self.pending = False
        path, early = self.cache_path, self.answered
        if isinstance(result, dict) and path is not None and result != self.cached:
            _store(path, result)
        if early is None:
            return data
        if result == early:
            return b""
        what = (f"refused initialize ({json.dumps(msg.get('error'))}), which {self.source} had answered"
                if result is None else f"answered initialize differently from {self.source}")
        return frame({"jsonrpc": "2.0", "method": "window/logMessage", "params": {
            "type": 1, "message": f"denpex: the server {what} (cache refreshed; restart the server to get "
                                  "its capabilities)"}})


# --- the initialize cache ------------------------------------------------------------------------

def _cache_dir() -> Path | None:
    base = cache_dir()
    return None if base is None else base / "lsp-initialize"


def _code_stamp() -> list[object]:
    """What the answer to `initialize` depends on besides the client: the server's code and versions."""
    import importlib.util

    from denpex import __version__

    here = Path(__file__).resolve().parent
    files = sorted([*here.glob("*.py"), *here.glob("handlers/*.py")])
    for mod in ("pygls", "lsprotocol"):
        spec = importlib.util.find_spec(mod)
        if spec is not None and spec.origin:
            files.append(Path(spec.origin))
    stamp: list[object] = [__version__, sys.version, sys.executable]
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        stamp.append((str(f), st.st_size, st.st_mtime_ns))
    return stamp


def cache_path(capabilities: object) -> Path | None:
    where = _cache_dir()
    if where is None:
        return None  # caching turned off: pygls answers, nothing is stored
    key = json.dumps([capabilities, _code_stamp()], sort_keys=True, default=str).encode()
    # two CRCs, not hashlib: importing hashlib (OpenSSL) costs more than the rest of this look-up
    return where / f"{zlib.crc32(key):08x}{zlib.crc32(key[::-1]):08x}{len(key):x}.json"


def _load(path: Path) -> Json | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("capabilities"), dict) else None


def _store(path: Path, result: Json) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(result), encoding="utf-8")
        os.replace(tmp, path)
        entries = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in entries[:-CACHE_ENTRIES]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # no cache: the next start answers later, nothing else changes


# --- the early part ------------------------------------------------------------------------------

class Early:
    def __init__(self, frames: Frames, out: Out) -> None:
        self.frames = frames
        self.out = out
        self.t0 = time.perf_counter()

    def run(self) -> None:
        msg = self.frames.next()
        if msg is None or msg.get("method") != "initialize" or "id" not in msg:
            return
        params = msg.get("params")
        if not isinstance(params, dict):
            return
        out = self.out
        out.init_id, out.pending = msg["id"], True
        out.cache_path = path = cache_path(params.get("capabilities"))
        out.cached = result = _load(path) if path is not None else None
        out.source = "the start-up cache"
        if result is None:
            from denpex.lsp import shipped

            result = shipped.answer(params)
            out.source = "the answer shipped with denpex"
        if result is None:
            return  # pygls answers; its answer is cached for the next start
        out.answered = result
        out.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        REPORT.append(f"start-up: initialize answered from {out.source} in "
                      f"{(time.perf_counter() - self.t0) * 1000:.0f} ms")
        self._first_document(params, result)

    def _first_document(self, params: Json, result: Json) -> None:
        from denpex.lsp.capabilities import ClientCaps

        caps = ClientCaps.from_json(params.get("capabilities"))
        if caps.pull_diagnostics:
            return  # the client asks for diagnostics; pygls answers that
        while True:
            msg = self.frames.next()
            if msg is None:
                return
            if msg.get("method") == "initialized":
                continue
            if msg.get("method") == "textDocument/didOpen":
                self._publish(msg.get("params"), params, result, caps)
            return

    def _publish(self, open_params: object, params: Json, result: Json, caps: object) -> None:
        from denpex.lsp.analysis import Analyzer
        from denpex.lsp.capabilities import ClientCaps
        from denpex.lsp.findings_json import diagnostic_json, for_client_json
        from denpex.lsp.kinds import Kind, kind_of, path_of
        from denpex.lsp.settings import SettingsStore, unwrap_editor_settings
        from denpex.rulebook import load_rulebook

        assert isinstance(caps, ClientCaps)
        td = open_params.get("textDocument") if isinstance(open_params, Mapping) else None
        if not isinstance(td, Mapping):
            return
        uri, text, version, language = td.get("uri"), td.get("text"), td.get("version"), td.get("languageId")
        if not (isinstance(uri, str) and isinstance(text, str) and isinstance(version, int)):
            return
        if kind_of(uri, language if isinstance(language, str) else None) is not Kind.PYTHON:
            return
        book = load_rulebook()
        store = SettingsStore(lambda: book)
        glob, per_folder = unwrap_editor_settings(params.get("initializationOptions"))
        store.set_global(glob)
        wf = params.get("workspaceFolders")
        folders = [p for p in (path_of(str(f.get("uri"))) for f in (wf if isinstance(wf, list) else [])
                               if isinstance(f, Mapping)) if p]
        root = params.get("rootUri")
        if not folders and isinstance(root, str):
            folders = [p for p in [path_of(root)] if p]
        store.set_folders(folders)
        for folder_uri, values in per_folder.items():
            p = path_of(folder_uri) if "://" in folder_uri else folder_uri
            if p is not None:
                store.set_folder(p, values)
        path = path_of(uri)
        settings = store.for_path(path)
        if len(text) > settings.max_file_bytes:
            return
        analyzer = Analyzer(lambda _msg: None)
        analyzer.set_folders(folders)
        findings = analyzer.analyse(text, path or uri, settings.config)
        caps_json = result.get("capabilities")
        encoding = str(caps_json.get("positionEncoding", "utf-16")) if isinstance(caps_json, dict) else "utf-16"
        lines = text.splitlines(keepends=True)
        diags: list[Json] = []
        for f in findings:
            try:
                d = diagnostic_json(f, lines=lines, encoding=encoding, caps=caps, settings=settings, book=book,
                                    version=version)
            except Exception:  # as the service does: one bad rule loses only its findings, and says so
                import traceback

                self.out.send({"jsonrpc": "2.0", "method": "window/logMessage", "params": {
                    "type": 1, "message": f"rule {f.rule}: finding dropped\n{traceback.format_exc()}"}})
                continue
            if d is not None:
                diags.append(d)
        self.out.send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                       "params": {"uri": uri, "diagnostics": for_client_json(diags, caps), "version": version}})
        REPORT.append(f"start-up: first diagnostics for {uri} published in "
                      f"{(time.perf_counter() - self.t0) * 1000:.0f} ms, before the LSP library was loaded")


def _start_code(on: bool) -> None:
    """denpex.startcode around the early part: installed (on), then its caches written (after the first
    diagnostics were sent) and re's own compile put back. A failure only costs the time it saves."""
    try:
        from denpex import startcode

        if on:
            startcode.install()
            return
        startcode.save()
        if startcode._RE_COMPILE is not None:
            from re import _compiler  # type: ignore[attr-defined]

            if _compiler.compile is startcode._re_compile:
                _compiler.compile = startcode._RE_COMPILE
    except Exception as exc:
        print(f"denpex: start-up code cache: {exc!r}", file=sys.stderr)


def serve_stdio(create_server: Callable[[], LanguageServer]) -> int:
    """The language server that `create_server` makes (denpex.lsp.app's), over stdin/stdout, with the early
    start-up above: the factory is called, and pygls imported, only after it."""
    raw_in, raw_out = sys.stdin.buffer, sys.stdout.buffer
    frames = Frames(BoundedStdin(raw_in))
    out = Out(raw_out)
    if os.environ.get("DENPEX_LSP_BOOT", "1") != "0":
        # no cycle collection until the first diagnostics are out: the imports' objects are kept for good
        # and the collector only re-walked them (5-7 ms of ~80); the server runs with it from then on
        was_on = gc.isenabled()
        gc.disable()
        _start_code(True)
        try:
            Early(frames, out).run()
        except Exception as exc:  # the early part is an optimisation: pygls takes over from here
            print(f"denpex: early start-up stopped: {exc!r}", file=sys.stderr)
        _start_code(False)
        if was_on:
            gc.enable()
    ls = create_server()
    ls.start_io(stdin=BoundedStdin(Replay(frames.consumed, raw_in)), stdout=out)  # type: ignore[arg-type]  # pygls reads readline()/read(n) only
    return 0
