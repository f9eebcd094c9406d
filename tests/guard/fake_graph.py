"""Run a guarded program on the CPU: a fake CUDA graph and real torch CPU tensors, one process per program.

The guard patches torch.cuda.CUDAGraph's capture_begin / capture_end / replay. Here the same patch goes on
FakeGraph, whose three calls do nothing: the ops between capture_begin and capture_end run eagerly on CPU
tensors, which the guard records (record.TRACKED_DEVICES gets "cpu") and traces as a capture; a replay is
checked exactly as a CUDA graph's would be. The guard keeps process-wide state (patches, traces, storage
watches), so each program is its own script, run in an interpreter of its own (forked by ForkServer, or
started as `python job.py`), and the test reads what the user would: the `denpex-guard: <rule> (<CODE>):
<message>` lines on stderr, with their file:line locations, and the program's own output.

Locations are written as markers: a line holding only `# @name` names the line after it, and
`Run.at("name")` is that line's `path:line` as the guard writes it. (A marker is a line of its own because
the guard quotes a captured line's source text in its messages.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO

SERVER = REPO / "server"

PRELUDE = '''\
import gc
import sys
import weakref

import torch

from denpex.guard import GuardError, patch, record, sites
from denpex.guard.lifecycle import State

record.TRACKED_DEVICES.add("cpu")
sites.skip_package(torch.__file__)


class FakeGraph:
    """torch.cuda.CUDAGraph's three calls, doing nothing; `ran` counts the replays that really ran."""

    ran = 0

    def capture_begin(self, *args, **kwargs):
        pass

    def capture_end(self):
        pass

    def replay(self):
        FakeGraph.ran += 1


STATE = State(refuse={refuse}, trace={trace})
patch.install(FakeGraph, STATE)
# ---- the program ----
'''

EPILOGUE = '''
# ---- end of the program ----
print("RAN", FakeGraph.ran)
print("FINDINGS", *[f.rule for f in STATE.reporter.findings])
'''

LINE = re.compile(r"^denpex-guard: (?P<rule>[a-z][a-z-]*) \((?P<code>DPX\d{3})\): (?P<message>.+)$")
MARKER = re.compile(r"^\s*# @(?P<name>[\w-]+)\s*$")


@dataclass(frozen=True)
class Finding:
    rule: str
    code: str
    message: str

    def line(self) -> str:
        return f"{self.rule} ({self.code}): {self.message}"


@dataclass
class Run:
    path: Path
    rc: int
    stdout: str
    stderr: str
    markers: dict[str, int]
    findings: list[Finding] = field(default_factory=list)
    guard_lines: list[str] = field(default_factory=list)  # every `denpex-guard: ...` line

    def at(self, marker: str) -> str:
        return f"{self.path}:{self.markers[marker]}"

    def rules(self) -> list[str]:
        return [f.rule for f in self.findings]

    def only(self, rule: str) -> Finding:
        """The one finding of the run, which must be of `rule`."""
        assert self.rules() == [rule], self.explain()
        return self.findings[0]

    def printed(self, key: str) -> list[str]:
        """The words after `key` on the program's stdout line `key ...`."""
        for line in self.stdout.splitlines():
            if line.split(" ", 1)[0] == key:
                return line.split()[1:]
        raise AssertionError(f"no {key!r} line in the output\n{self.explain()}")

    def explain(self) -> str:
        return f"exit code {self.rc}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


Program = Callable[..., Run]  # the `program` fixture: program(body, refuse=..., trace=..., fresh=...) -> Run


def script_text(body: str, refuse: bool, trace: bool) -> str:
    return PRELUDE.format(refuse=refuse, trace=trace) + textwrap.dedent(body).strip("\n") + "\n" + EPILOGUE


def markers_of(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        m = MARKER.match(line)
        if m:
            assert m["name"] not in out, f"marker {m['name']} twice"
            out[m["name"]] = number + 1
    return out


def child_env(**extra: str) -> dict[str, str]:
    """This environment, with this checkout's server/ first on the path and none of the guard's or
    torchrun's variables (a [rankN]: prefix would change the lines)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DENPEX_GUARD") and k not in ("RANK", "WORLD_SIZE")}
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SERVER) + (os.pathsep + old if old else "")
    env.update(extra)
    return env


FORK_SERVER = r"""
import json, os, runpy, sys, time, traceback

# what a guarded program imports, and what the first capture's dispatch mode imports (torch._dynamo: some
# 3 s), paid once here; the guard's modules are imported, not installed: each program installs its own
import torch
import torch._dynamo
import denpex.guard.checks, denpex.guard.lifecycle, denpex.guard.patch


def child(req):
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    for key, target in (("stdout", 1), ("stderr", 2)):
        fd = os.open(req[key], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, target)
        os.close(fd)
    script = req["script"]
    sys.argv = [script]
    sys.path[0] = os.path.dirname(script)
    rc = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        rc = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(rc)


for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        child(req)
    deadline = time.monotonic() + req["timeout"]
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            rc = -9
            break
        time.sleep(0.002)
    print(json.dumps({"rc": rc}), flush=True)
"""


class ForkServer:
    """One interpreter that has imported torch (and what the guard's first capture imports) and forks a
    fresh child per program: each program still starts from an interpreter in which nothing was captured,
    patched or traced, for a few milliseconds instead of seconds. The server runs from a `-c` string, so
    the only frames above a program's own are the standard library's (runpy) and `<string>`, none of which
    the guard takes for the user's, as with `python job.py`. test_harness.py checks that a program says the
    same through both.

    One difference stays: a process's first dispatch mode imports torch._dynamo, and that first call
    leaves reference cycles holding the capture's inputs (the guard collects them at capture end). The
    server has made that import already, so a test of when an input is freed runs its program as
    `python job.py` too (`program(..., fresh=True)`)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._err = log.open("w")
        self.proc = subprocess.Popen([sys.executable, "-c", FORK_SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err, text=True, env=child_env())

    def run(self, script: Path, stdout: Path, stderr: Path, timeout: float = 120) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        req = {"script": str(script), "stdout": str(stdout), "stderr": str(stderr), "timeout": timeout}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the fork server died:\n{self.log.read_text()}")
        return int(json.loads(reply)["rc"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self._err.close()


def run_program(tmp_path: Path, body: str, *, refuse: bool = False, trace: bool = True, name: str = "job",
                server: ForkServer | None = None) -> Run:
    """Run `body` (a guarded program, dedented) in a fresh interpreter (forked by `server`, or started as
    `python job.py` without one); parse the guard's lines."""
    text = script_text(body, refuse, trace)
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    if server is not None:
        out, err = tmp_path / f"{name}.stdout", tmp_path / f"{name}.stderr"
        rc = server.run(path, out, err)
        stdout, stderr = out.read_text(), err.read_text()
    else:
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=180,
                           cwd=tmp_path, env=child_env(), check=False)
        rc, stdout, stderr = r.returncode, r.stdout, r.stderr
    run = Run(path, rc, stdout, stderr, markers_of(text))
    for line in stderr.splitlines():
        if line.startswith("denpex-guard: "):
            run.guard_lines.append(line)
        m = LINE.match(line)
        if m:
            run.findings.append(Finding(m["rule"], m["code"], m["message"]))
    # whatever the program: the guard never breaks, says each finding once, and says on stderr exactly
    # what it recorded
    assert not any("internal error" in line for line in run.guard_lines), run.explain()
    assert len(set(run.guard_lines)) == len(run.guard_lines), run.explain()
    if "FINDINGS" in stdout:
        assert run.printed("FINDINGS") == run.rules(), run.explain()
    return run


def clean(run: Run) -> None:
    """A program the guard must say nothing about (and must not stop)."""
    assert run.rc == 0, run.explain()
    assert run.guard_lines == [], run.explain()
    assert run.printed("FINDINGS") == [], run.explain()
