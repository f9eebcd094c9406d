"""`denpex scan` and `denpex serve` never run the user's code and open no network connection.

The workspace is hostile: every Python file in it, if imported or run, writes a marker file and tries
to connect out. Some are named like the libraries Denpex imports (yaml.py, regex.py, pygls.py ...),
and the commands run with that workspace as their working directory, as an editor starts them
(`python -m` puts the working directory first on sys.path). The child interpreter carries a
sitecustomize tripwire (the approach of tests/test_no_network.py, extended): creating an inet socket,
resolving a name, spawning a process or exec'ing is recorded and refused. A fork is recorded and let through:
`denpex scan` shares the capture files out to forked copies of itself (engine/jobs.py), which inherit the
tripwire, so whatever they do is caught the same way.

One socket kind is allowed and recorded separately: `socket.socketpair(AF_UNIX)`. asyncio's event loop
(which pygls runs the server on) makes one for its self-pipe; it never leaves the process.
`denpex diagnose` is covered by tests/test_no_network.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.robustness.wire import RawServer

TRIPWIRE = """
import os, socket, subprocess, _socket
_LOG = os.environ["DENPEX_TRIPWIRE_LOG"]
def _note(what):
    with open(_LOG, "a") as fh:
        fh.write(what + "\\n")
def _trip(what):
    _note(what)
    raise OSError("tripwire: " + what)
_Socket = socket.socket
class _NoSocket(_Socket):
    def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
        if family != socket.AF_UNIX:
            _trip("socket(%s)" % family)
        _note("ALLOWED unix socket")
        super().__init__(family, type, proto, fileno)
socket.socket = _NoSocket
def _pair(family=socket.AF_UNIX, type=socket.SOCK_STREAM, proto=0):
    if family != socket.AF_UNIX:
        _trip("socketpair(%s)" % family)
    _note("ALLOWED socketpair(AF_UNIX)")
    a, b = _socket.socketpair(family, type, proto)
    return _Socket(family, type, proto, a.detach()), _Socket(family, type, proto, b.detach())
socket.socketpair = _pair
socket.create_connection = lambda *a, **k: _trip("create_connection")
socket.getaddrinfo = lambda *a, **k: _trip("getaddrinfo")
socket.gethostbyname = lambda *a, **k: _trip("gethostbyname")
class _NoPopen(subprocess.Popen):
    def __init__(self, *a, **k):
        _trip("subprocess")
subprocess.Popen = _NoPopen
_fork = os.fork
def _forked():
    _note("ALLOWED fork")  # the scan's own worker processes: each inherits this tripwire
    return _fork()
os.fork = _forked
for _name in ("system", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp",
              "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "popen"):
    if hasattr(os, _name):
        setattr(os, _name, (lambda n: lambda *a, **k: _trip("os." + n))(_name))
"""

# imported by denpex or its libraries: a file of that name in the working directory must not shadow it
SHADOWED = ["yaml", "regex", "fastjsonschema", "ahocorasick_rs", "tree_sitter", "tree_sitter_python",
            "pathspec", "pygls", "lsprotocol", "cattrs", "attrs", "json", "asyncio", "typing_extensions",
            "sitecustomize", "usercustomize", "conftest", "setup", "torch", "train", "__main__"]


def evil(marker: Path, name: str) -> str:
    return f"""# imported or run, this file leaves a marker and tries to phone home
import socket
open({str(marker)!r}, "a").write({name!r} + "\\n")
try:
    socket.create_connection(("192.0.2.1", 9), timeout=0.1)
except OSError:
    pass
import torch
g = torch.cuda.CUDAGraph()
x = torch.zeros(4, device="cuda")
with torch.cuda.graph(g):
    v = x.sum().item()
"""


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    marker = tmp_path / "EXECUTED"
    (ws / "pkg").mkdir(parents=True)
    for name in SHADOWED:
        (ws / f"{name}.py").write_text(evil(marker, name))
    (ws / "pkg" / "__init__.py").write_text(evil(marker, "pkg/__init__"))
    (ws / "pkg" / "model.py").write_text("from . import helpers\n" + evil(marker, "pkg/model"))
    (ws / "pkg" / "helpers.py").write_text(evil(marker, "pkg/helpers"))
    (ws / "pyproject.toml").write_text("[tool.denpex]\ncapture_wrappers = ['pkg.model.capture']\n")
    (ws / "run.log").write_text((REPO / "examples" / "01_item_in_capture.log").read_text())
    return ws, marker


def tripwired_env(tmp_path: Path, trailing_colon: bool = False) -> tuple[dict[str, str], Path]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(TRIPWIRE)
    log = tmp_path / "trips.txt"
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    if trailing_colon:  # an empty entry: the working directory, the workspace
        paths.append("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "DENPEX_TRIPWIRE_LOG": str(log)}
    return env, log


def trips(log: Path) -> tuple[list[str], list[str]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [x for x in lines if not x.startswith("ALLOWED")], [x for x in lines if x.startswith("ALLOWED")]


def test_tripwire_fires_on_connect_and_on_running_the_file(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    """The fixture is really hostile and the tripwire really catches it."""
    ws, marker = hostile
    env, log = tripwired_env(tmp_path)
    subprocess.run([sys.executable, str(ws / "train.py")], env=env, cwd=ws, capture_output=True, timeout=60,
                   check=False)
    assert marker.exists() and "train" in marker.read_text()
    bad, _ = trips(log)
    assert "create_connection" in bad, bad


@pytest.mark.parametrize("args", [("scan", "."), ("scan", ".", "--format", "json"), ("scan", ".", "--format", "sarif"),
                                  ("scan", "pkg/model.py", "train.py"), ("scan", ".", "--fix", "--unsafe-fixes"),
                                  ("scan", ".", "PYTHONPATH ends with ':'")],
                         ids=lambda a: " ".join(a))
def test_scan_runs_nothing_and_connects_nowhere(hostile: tuple[Path, Path], tmp_path: Path,
                                                args: tuple[str, ...]) -> None:
    ws, marker = hostile
    env, log = tripwired_env(tmp_path, trailing_colon=args[-1].startswith("PYTHONPATH"))
    args = tuple(a for a in args if not a.startswith("PYTHONPATH"))
    r = subprocess.run([sys.executable, "-m", "denpex", *args], env=env, cwd=ws, capture_output=True, timeout=120,
                       check=False)
    assert r.returncode in (0, 1), r.stderr.decode()
    found = b"DPX101" in r.stdout or b"capture-item-sync" in r.stdout
    assert found or "--fix" in args, r.stdout.decode()  # it did analyse the files
    assert not marker.exists(), f"user code ran: {marker.read_text()}"
    bad, allowed = trips(log)
    # forks are the scan's workers (engine/jobs.py), copies of denpex that inherit the tripwire: what they do
    # is recorded here too
    assert bad == [] and set(allowed) <= {"ALLOWED fork"}, (bad, allowed)


def test_scan_in_one_process_forks_nothing(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    ws, marker = hostile
    env, log = tripwired_env(tmp_path)
    r = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--jobs", "1"], env=env, cwd=ws,
                       capture_output=True, timeout=120, check=False)
    assert r.returncode == 1 and b"DPX101" in r.stdout, r.stderr.decode()
    assert not marker.exists() and trips(log) == ([], [])


def test_serve_runs_nothing_and_connects_nowhere(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    ws, marker = hostile
    env, log = tripwired_env(tmp_path)
    s = RawServer(tmp_path / "server.err", env=env, cwd=ws)
    try:
        s.initialize(ws.as_uri())
        uri = (ws / "pkg" / "model.py").as_uri()
        text = (ws / "pkg" / "model.py").read_text()
        s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                           "text": text}})
        diags = s.diagnostics(uri, version=1, timeout=60)
        assert any(d["code"] == "DPX101" for d in diags), diags
        line = next(i for i, ln in enumerate(text.splitlines()) if ".item()" in ln)
        s.call("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": 12}})
        s.call("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": diags[0]["range"],
                                           "context": {"diagnostics": diags}})
        s.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        s.notify("workspace/didChangeWatchedFiles", {"changes": [
            {"uri": (ws / "pkg" / "helpers.py").as_uri(), "type": 2}, {"uri": (ws / "pyproject.toml").as_uri(), "type": 2}]})
        log_uri = (ws / "run.log").as_uri()
        s.notify("textDocument/didOpen", {"textDocument": {"uri": log_uri, "languageId": "log", "version": 1,
                                                           "text": (ws / "run.log").read_text()}})
        s.diagnostics(log_uri, version=1, timeout=60)
        tb = ('Traceback (most recent call last):\n  File "%s", line 12, in <module>\n    v = x.sum().item()\n'
              "RuntimeError: CUDA error: operation not permitted when stream is capturing\n" % (ws / "pkg" / "model.py"))
        r = s.call("workspace/executeCommand", {"command": "denpex.diagnose", "arguments": [tb]}, timeout=60)
        assert "result" in r, r
        s.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        s.drain(1.0)  # let the background workspace index finish over the hostile files
        assert any(m.get("method") == "window/logMessage" and "indexed" in m["params"]["message"]
                   for m in s.received), "the workspace index never ran"
    finally:
        code = s.close()
    assert code == 0, (tmp_path / "server.err").read_text()[-3000:]
    assert not marker.exists(), f"user code ran: {marker.read_text()}"
    bad, allowed = trips(log)
    assert bad == [], bad
    # asyncio's self-pipe, and nothing else: no more than a couple of AF_UNIX pairs for the whole session
    assert set(allowed) <= {"ALLOWED socketpair(AF_UNIX)"} and len(allowed) <= 2, allowed
    print(f"\nserve: {len(allowed)} AF_UNIX socketpair(s) (asyncio self-pipe); no other socket, no process; "
          f"{json.dumps(bad)}")
