"""The early start-up runs with denpex.startcode (lsp/boot.py `_start_code`): dataclasses' generated methods and
re's patterns are cached per user once the first diagnostics are out, a warm start reads them back with the
same diagnostics, and re's own compile is back in place before pygls takes over. With the files shipped in the
package (denpex/_startcode, built by python -m denpex.startcode_build as hatch_build.py runs it), a start on an
empty per-user cache compiles nothing, so it writes nothing there, and publishes the same diagnostics; the
cycle collector is back on once the early part is done."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.robustness.wire import RawServer

from conftest import SCENARIO, uri
from denpex import startcode

ROOT = Path(__file__).resolve().parents[2]


def first_publish(tmp: Path, cache: Path, name: str, **extra: str) -> list[list[dict[str, Any]]]:
    folder = tmp / "ws"
    folder.mkdir(exist_ok=True)
    shutil.copy(SCENARIO, folder / "train.py")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "DENPEX_STARTCODE_SHIPPED": "0", **extra}
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


def _run_probe(probe: str, cache: Path) -> subprocess.CompletedProcess[str]:
    """`python -c probe` in a fresh process whose per-user cache is under `cache`."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("DENPEX_CACHE_DIR", None)
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False)


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
    done = _run_probe(probe, tmp_path / "cache")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert list((tmp_path / "cache" / "denpex").glob("re-code-*.marshal"))


def _tree_with_shipped_code(tmp: Path) -> Path:
    """A copy of the source tree, its snapshot and start-up code built as an install builds them."""
    tree = tmp / "tree"
    shutil.copytree(ROOT / "server", tree / "server",
                    ignore=shutil.ignore_patterns("__pycache__", "_snapshot.pickle", "_startcode"))
    shutil.copytree(ROOT / "rules", tree / "rules")
    env = {**os.environ, "PYTHONPATH": str(tree / "server"), "DENPEX_CACHE_DIR": str(tmp / "build-cache")}
    for cmd in (["denpex.snapshot_build"], ["denpex.startcode_build", str(tree / "server" / "denpex" / "_startcode")]):
        done = subprocess.run([sys.executable, "-m", *cmd], env=env, cwd=tree, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
    assert len(list((tree / "server" / "denpex" / "_startcode").glob("*.marshal"))) == 2
    return tree


def test_a_first_start_with_the_shipped_code_compiles_nothing(tmp_path: Path) -> None:
    tree = _tree_with_shipped_code(tmp_path)
    on = {"PYTHONPATH": str(tree / "server"), "DENPEX_STARTCODE_SHIPPED": "1"}
    baseline = first_publish(tmp_path, tmp_path / "off", "off", PYTHONPATH=str(tree / "server"))
    assert {p.name.split("-")[0] for p in (tmp_path / "off" / "denpex").glob("*.marshal")} == {"dataclass", "re"}
    got = first_publish(tmp_path, tmp_path / "fresh", "fresh", **on)
    assert all(p == baseline[0] for p in got) and [d["code"] for d in got[0]] == ["DPX101"]
    # every dataclass text came from the package: that per-user file was not written
    assert not list((tmp_path / "fresh").rglob("dataclass-code-*.marshal"))
    # and every pattern, but those built from the document's own names (mentions._name_re: `out`)
    added: set[object] = set()
    for mine in (tmp_path / "fresh").rglob("re-code-*.marshal"):
        ship = startcode._read(next((tree / "server" / "denpex" / "_startcode").glob("re-code-*.marshal")))
        assert isinstance(ship, dict)
        added |= set(startcode._read(mine)) - set(ship["entries"])
    assert added <= {(b"(?<![A-Za-z0-9_])out(?![A-Za-z0-9_])", 0)}, added


def test_the_cycle_collector_is_back_on_after_the_early_part(tmp_path: Path) -> None:
    probe = (
        "import gc, io, sys\n"
        "from denpex.lsp import boot\n"
        "seen = []\n"
        "class Stop(Exception): pass\n"
        "def early_run(self): seen.append(gc.isenabled())\n"
        "boot.Early.run = early_run\n"
        "class Server:\n"
        "    def start_io(self, stdin, stdout): seen.append(gc.isenabled())\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b''))\n"
        "boot.serve_stdio(Server)\n"
        "print(seen)\n"
    )
    done = _run_probe(probe, tmp_path / "cache")
    assert done.returncode == 0 and done.stdout.strip() == "[False, True]", done.stderr
