"""Nothing leaves the machine: the diagnosis path opens no socket and starts no process.

The CLI runs in a child interpreter whose sitecustomize replaces socket creation and
process spawning with tripwires that record any attempt in a file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

TRIPWIRE = """
import os, socket, subprocess
_LOG = os.environ["DENPEX_TRIPWIRE_LOG"]
def _trip(what):
    with open(_LOG, "a") as fh:
        fh.write(what + "\\n")
    raise OSError("tripwire: " + what)
class _NoSocket(socket.socket):
    def __init__(self, *a, **k):
        _trip("socket")
socket.socket = _NoSocket
socket.create_connection = lambda *a, **k: _trip("create_connection")
socket.getaddrinfo = lambda *a, **k: _trip("getaddrinfo")
_Popen = subprocess.Popen
class _NoPopen(_Popen):
    def __init__(self, *a, **k):
        _trip("subprocess")
subprocess.Popen = _NoPopen
os.system = lambda *a, **k: _trip("os.system")
"""


def _run_tripwired(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[bytes], str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(TRIPWIRE)
    log = tmp_path / "trips.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "DENPEX_TRIPWIRE_LOG": str(log)}
    r = subprocess.run([sys.executable, "-m", "denpex", *args], capture_output=True, env=env, timeout=120,
                       check=False)
    return r, log.read_text() if log.exists() else ""


def test_tripwire_itself_fires(tmp_path: Path) -> None:
    r, trips = _run_tripwired(tmp_path, "run", "--no-bundle", "--", "true")
    # `denpex run` legitimately starts the user's command: the tripwire must catch that.
    assert "subprocess" in trips, (r.stderr, trips)


def test_diagnose_opens_no_socket_and_spawns_nothing(tmp_path: Path) -> None:
    for fmt in ("text", "json", "markdown"):
        sub = tmp_path / fmt
        sub.mkdir()
        r, trips = _run_tripwired(sub, "diagnose", str(REPO / "examples" / "a1_rank1_dies.log"), "--format", fmt)
        assert r.returncode == 1, r.stderr
        assert trips == "", f"diagnose tried: {trips}"


def test_rules_and_explain_open_no_socket(tmp_path: Path) -> None:
    for args in (("rules",), ("explain", "DPX100")):
        sub = tmp_path / args[0]
        sub.mkdir()
        r, trips = _run_tripwired(sub, *args)
        assert r.returncode == 0 and trips == "", (args, trips, r.stderr)
