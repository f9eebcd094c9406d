"""The early start-up runs with denpex.startcode (lsp/boot.py `_start_code`): dataclasses' generated methods and
re's patterns are cached per user once the first diagnostics are out, a warm start reads them back with the
same diagnostics, and re's own compile is back in place before pygls takes over."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.robustness.wire import RawServer

from conftest import SCENARIO, uri


def first_publish(tmp: Path, cache: Path, name: str) -> list[list[dict[str, Any]]]:
    folder = tmp / "ws"
    folder.mkdir(exist_ok=True)
    shutil.copy(SCENARIO, folder / "train.py")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("DENPEX_CACHE_DIR", None)
    s = RawServer(tmp / f"{name}.stderr", env=env, cwd=folder)
    try:
        s.initialize(uri(folder))
        doc = uri(folder / "train.py")
        s.notify("textDocument/didOpen", {"textDocument": {
            "uri": doc, "languageId": "python", "version": 1, "text": (folder / "train.py").read_text()}})
        s.drain(0.5)
    finally:
        s.close()
    publishes = [m["params"]["diagnostics"] for m in s.received
                 if m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == 1]
    assert publishes, s.received
    return publishes


def test_start_code_is_cached_after_the_first_diagnostics_and_read_back_alike(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cold = first_publish(tmp_path, cache, "cold")
    where = cache / "denpex"
    written = {p.name.split("-")[0] + "-" + p.name.split("-")[1] for p in where.glob("*.marshal")}
    assert written == {"dataclass-code", "re-code"}, sorted(p.name for p in where.iterdir())
    stamps = {p: p.stat().st_mtime_ns for p in where.glob("*.marshal")}
    warm = first_publish(tmp_path, cache, "warm")
    assert all(p == cold[0] for p in cold + warm)
    assert [d["code"] for d in warm[0]] == ["DPX101"]
    # a warm start compiled nothing new on the early path: the files were not written again
    assert {p: p.stat().st_mtime_ns for p in where.glob("*.marshal")} == stamps


def test_re_compile_is_restored_after_the_early_part(tmp_path: Path) -> None:
    probe = (
        "import re\n"
        "from re import _compiler\n"
        "own = _compiler.compile\n"
        "from denpex import startcode\n"
        "from denpex.lsp.boot import _start_code\n"
        "_start_code(True)\n"
        "assert _compiler.compile is startcode._re_compile\n"
        "re.compile('a+b')\n"
        "_start_code(False)\n"
        "assert _compiler.compile is own\n"
        "print('ok')\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("DENPEX_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert list((tmp_path / "cache" / "denpex").glob("re-code-*.marshal"))
