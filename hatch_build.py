"""Build hook: compile the native key search (server/denpex/logs/_teddy.c) into the wheel, if it can;
parse the shipped YAML (rule book, entry-point presets) into denpex/_snapshot.pickle (denpex.snapshot);
and run the language server's early start-up once to ship its compiled dataclass code and re patterns
in denpex/_startcode/ (denpex.startcode), so that a first start after the install compiles none.

Optional by design: where there is no C compiler, the CPU is not x86-64, or the build fails, the
wheel stays pure Python and denpex uses the aho-corasick crate's passes instead (the same answers,
slower on big logs). DENPEX_NO_NATIVE=1 skips the compile. An editable install gets the module
beside its source (git ignores it), where the editable package finds it.
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("server") / "denpex" / "logs" / "_teddy.c"
SNAPSHOT = "_snapshot.pickle"
STARTCODE = Path("server") / "denpex" / "_startcode"  # an editable install's shipped start-up code


def _tree_env(root: Path, **extra: str) -> dict[str, str]:
    """The build's environment with the source tree first on the path. pip's isolated build environment puts
    the build requirements on PYTHONPATH: replacing it (as both builders did) hid them, so `pip install .` in a
    fresh virtual environment shipped neither the snapshot nor the start-up code (only an environment that had
    the requirements installed anyway built them)."""
    path = os.pathsep.join(p for p in (str(root / "server"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def build_snapshot(root: Path, out: Path) -> Path | None:
    """The parsed YAML written to `out` by the source tree's own loader (build-system requires PyYAML,
    regex and fastjsonschema), or None with one line on stderr: denpex then parses at run time."""
    env = _tree_env(root, DENPEX_CACHE_DIR="")
    try:
        done = subprocess.run([sys.executable, "-m", "denpex.snapshot_build", str(out)], capture_output=True,
                              text=True, timeout=300, env=env, cwd=root)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"denpex: no rule-book snapshot ({exc}); rules are parsed at run time", file=sys.stderr)
        return None
    if done.returncode != 0 or not out.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        print(f"denpex: no rule-book snapshot ({tail[0]}); rules are parsed at run time", file=sys.stderr)
        return None
    return out


def build_startcode(root: Path, out_dir: Path, snapshot: Path | None) -> list[Path]:
    """denpex.startcode's shipped files for this Python, written to out_dir by the source tree's own early
    start-up (build-system requires its imports: tree-sitter, tree-sitter-python, pygls), or [] with one line
    on stderr: starts then compile them once per user, as without the files."""
    env = _tree_env(root)
    cmd = [sys.executable, "-m", "denpex.startcode_build", str(out_dir)]
    if snapshot is not None:
        cmd += ["--snapshot", str(snapshot)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=root)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"denpex: no start-up code shipped ({exc}); compiled at the first start", file=sys.stderr)
        return []
    written = [Path(line) for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not written or not all(p.is_file() for p in written):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        print(f"denpex: no start-up code shipped ({tail[0]}); compiled at the first start", file=sys.stderr)
        return []
    return written


def compile_native(root: Path, out_dir: Path) -> Path | None:
    """The compiled module in out_dir, or None (with one line on stderr saying why)."""
    if os.environ.get("DENPEX_NO_NATIVE") == "1":
        return None
    if sys.platform == "win32" or platform.machine().lower() not in ("x86_64", "amd64"):
        return None  # the searcher is AVX2 code; elsewhere the crate's passes are used
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    out = out_dir / f"_teddy{suffix}"
    link = shlex.split(sysconfig.get_config_var("LDSHARED") or "cc -shared")
    if shutil.which(link[0]) is None:
        print(f"denpex: no {link[0]}; building without the native key search", file=sys.stderr)
        return None
    cmd = [*link, "-O3", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(root / SOURCE), "-o", str(out)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"denpex: native key search not built ({exc}); the crate's passes are used", file=sys.stderr)
        return None
    if done.returncode != 0 or not out.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        print(f"denpex: native key search not built ({tail[0]}); the crate's passes are used", file=sys.stderr)
        return None
    return out


class NativeSearchHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        if version == "editable":
            built = compile_native(root, root / SOURCE.parent)  # imported from the source tree
            snap_path = build_snapshot(root, root / "server" / "denpex" / SNAPSHOT)
            build_startcode(root, root / STARTCODE, snap_path)
        else:
            self._tmp = tempfile.mkdtemp(prefix="denpex-native-")
            built = compile_native(root, Path(self._tmp))
            if built is not None:
                build_data["force_include"][str(built)] = f"denpex/logs/{built.name}"
            snap = build_snapshot(root, Path(self._tmp) / SNAPSHOT)
            if snap is not None:
                build_data["force_include"][str(snap)] = f"denpex/{SNAPSHOT}"
            for code in build_startcode(root, Path(self._tmp) / "startcode", snap):
                build_data["force_include"][str(code)] = f"denpex/_startcode/{code.name}"
        if built is not None:
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
