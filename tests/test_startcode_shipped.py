"""denpex.startcode's shipped files (denpex/_startcode, written at build time by python -m
denpex.startcode_build): with an empty per-user cache the early start-up reads them and compiles no
dataclass text and no re pattern, to the same diagnostics; a file of another Python build is not read; a
file from older source only misses (what it lacks is compiled and goes to the per-user cache); a per-user
file, where there is one, is read instead. Each case runs the language server's early path (lsp/boot.py's
Early, as startcode_build runs it) in a fresh interpreter, the shipped folder pointed at a temp dir.
hatch_build.build_startcode runs the same module and names what it wrote."""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from denpex import startcode

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import io, json, sys
from pathlib import Path
from denpex import startcode
startcode.SHIPPED = Path(sys.argv[1])
if sys.argv[2] == "no-shipped-read":
    def refuse(kind):
        raise AssertionError("the shipped file was read")
    startcode._read_shipped = refuse
compiled = []
real = compile
def counting(*a, **k):
    compiled.append(a[0])
    return real(*a, **k)
startcode.compile = counting  # _exec's compile: the module's global, ahead of the builtin
startcode.install()
from denpex import startcode_build
from denpex.lsp import boot
from denpex.lsp.stdio import BoundedStdin
folder = Path(sys.argv[3])
folder.mkdir(exist_ok=True)
doc = folder / "train.py"
doc.write_text(startcode_build.DOCUMENT)
out = io.BytesIO()
boot.Early(boot.Frames(BoundedStdin(io.BytesIO(startcode_build.session(folder, doc)))), boot.Out(out)).run()
re_added = startcode._re_added
startcode.save()
data, diags = out.getvalue(), None
while data:
    head, _, rest = data.partition(b"\\r\\n\\r\\n")
    n = int(head.split(b"Content-Length: ")[1].split(b"\\r\\n")[0])
    msg, data = json.loads(rest[:n]), rest[n:]
    if msg.get("method") == "textDocument/publishDiagnostics":
        diags = msg["params"]["diagnostics"]
print(json.dumps({"compiled": len(compiled), "re_added": re_added, "patterns": len(startcode._re_args),
                  "diagnostics": diags}))
"""


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DENPEX_CACHE_DIR", "DENPEX_STARTCODE_SHIPPED")}
    return {**env, "DENPEX_CACHE_DIR": str(cache), **extra}


def _probe(shipped: Path, cache: Path, mode: str = "", **extra: str) -> dict[str, Any]:
    # one project folder for every probe: the diagnostics name its file
    folder = cache.parent / "project"
    done = subprocess.run([sys.executable, "-c", PROBE, str(shipped), mode, str(folder)], capture_output=True, text=True,
                          env=_env(cache, **extra), cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return got


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("shipped")
    done = subprocess.run([sys.executable, "-m", "denpex.startcode_build", str(where)], capture_output=True,
                          text=True, env=_env(where / "unused"), cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert sorted(Path(p).name.split("-")[0] for p in done.stdout.split()) == ["dataclass", "re"]
    return where


def _entries(path: Path) -> dict[Any, Any]:
    got = marshal.loads(path.read_bytes())
    assert got["format"] == startcode.SHIPPED_FORMAT
    entries: dict[Any, Any] = got["entries"]
    return entries


def test_a_fresh_cache_start_compiles_nothing_with_the_shipped_files(shipped: Path, tmp_path: Path) -> None:
    without = _probe(tmp_path / "none", tmp_path / "c0")  # no shipped files: today's cold start
    assert without["compiled"] > 50 and without["re_added"]
    got = _probe(shipped, tmp_path / "c1")
    assert got["compiled"] == 0 and not got["re_added"] and got["patterns"] > 10
    assert got["diagnostics"] == without["diagnostics"] and got["diagnostics"]
    assert [d["code"] for d in got["diagnostics"]] == ["DPX101"]
    # nothing was compiled, so nothing was written: the next start reads the shipped files again
    assert not (tmp_path / "c1").exists() or not list((tmp_path / "c1").glob("*.marshal"))
    off = _probe(shipped, tmp_path / "c2", DENPEX_STARTCODE_SHIPPED="0")
    assert off["compiled"] == without["compiled"]


def test_a_shipped_file_of_another_build_is_not_read(shipped: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    for p in shipped.glob("*.marshal"):  # the right names, another build inside
        doc = marshal.loads(p.read_bytes())
        doc["build"] = b"3.99.0 (another build)\0cpython-399"
        (other / p.name).write_bytes(marshal.dumps(doc))
    got = _probe(other, tmp_path / "c1")
    assert got["compiled"] > 50 and got["re_added"]
    renamed = tmp_path / "renamed"  # the right content under another build's name
    renamed.mkdir()
    for p in shipped.glob("*.marshal"):
        kind = p.name.rsplit("-", 1)[0]
        (renamed / f"{kind}-00000000.marshal").write_bytes(p.read_bytes())
    got = _probe(renamed, tmp_path / "c2")
    assert got["compiled"] > 50 and got["re_added"]


def test_a_shipped_file_from_older_source_only_misses(shipped: Path, tmp_path: Path) -> None:
    older = tmp_path / "older"
    older.mkdir()
    dc = startcode.shipped_path("dataclass-code", shipped)
    doc = marshal.loads(dc.read_bytes())
    texts = sorted(doc["entries"])
    gone = texts[::7]  # as if these classes had changed since the build: their texts are not in the file
    for t in gone:
        del doc["entries"][t]
    (older / dc.name).write_bytes(marshal.dumps(doc))
    cache = tmp_path / "cache"
    got = _probe(older, cache)
    assert got["compiled"] == len(gone)
    mine = startcode._read(next(cache.glob("dataclass-code-*.marshal")))
    assert isinstance(mine, dict) and set(texts) <= set(mine)  # the per-user file holds all now
    # the per-user file is read, the shipped one not at all
    again = _probe(older, cache, "no-shipped-read")
    assert again["compiled"] == 0 and again["diagnostics"] == got["diagnostics"]


def test_hatch_build_writes_the_shipped_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # hatchling is a build-time dependency only: its base class stubbed, the hook's functions are plain
    iface = types.ModuleType("hatchling.builders.hooks.plugin.interface")
    iface.BuildHookInterface = object  # type: ignore[attr-defined]
    for name in ("hatchling", "hatchling.builders", "hatchling.builders.hooks", "hatchling.builders.hooks.plugin"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, iface.__name__, iface)
    spec = importlib.util.spec_from_file_location("denpex_hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "unused"))
    written = hook.build_startcode(ROOT, tmp_path / "out", None)
    assert sorted(p.name for p in written) == sorted(
        startcode.shipped_path(k, tmp_path / "out").name for k in ("dataclass-code", "re-code"))
    assert len(_entries(written[0])) > 50


_ISOLATED_BUILD = """
import importlib.util, sys, types
from pathlib import Path
iface = types.ModuleType("hatchling.builders.hooks.plugin.interface")
iface.BuildHookInterface = object
for name in ("hatchling", "hatchling.builders", "hatchling.builders.hooks", "hatchling.builders.hooks.plugin"):
    sys.modules[name] = types.ModuleType(name)
sys.modules[iface.__name__] = iface
root, out = Path(sys.argv[1]), Path(sys.argv[2])
spec = importlib.util.spec_from_file_location("denpex_hatch_build", root / "hatch_build.py")
hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hook)
snap = hook.build_snapshot(root, out / "_snapshot.pickle")
code = hook.build_startcode(root, out / "startcode", snap)
print(snap is not None, len(code))
"""


def test_a_build_whose_requirements_are_only_on_pythonpath_ships_both(tmp_path: Path) -> None:
    """pip's isolated build environment: a Python with no packages of its own, the build requirements reachable
    only through PYTHONPATH. The builders run the source tree's modules in a child Python; the child must keep
    that path (replacing it, a fresh `pip install .` shipped neither the snapshot nor the start-up code)."""
    import sysconfig
    import venv

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    python = bare / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    (tmp_path / "out").mkdir()  # the hook's temporary folder
    paths = sysconfig.get_paths()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": os.pathsep.join(dict.fromkeys((paths["purelib"], paths["platlib"]))),
            "DENPEX_CACHE_DIR": str(tmp_path / "unused")}
    done = subprocess.run([str(python), "-c", _ISOLATED_BUILD, str(ROOT), str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "2"], done.stderr
