"""Relative imports and module lookup on multi-file workspaces (issue 19, the oracle's top miss cause).

Each workspace is a package tree written to a tmp dir, whose capture reaches a hazard only through a relative
import (`from ..utils import f`, `from . import b`, `from .b import C`, a namespace package), next to decoys a
last-name lookup would take instead (a top-level `utils.py` with a harmless `f`, added first). The shadowing
cases have a workspace file named like a module outside the workspace (`torch.distributed`, `json`, `torch`):
a call of that module must not enter the local file. Each workspace is analysed with its paths absolute (as
the language server has them) and relative to the root (as `denpex scan .` has them); one goes through the
CLI as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace

CAPTURE = """\
import torch
{imports}


def capture(x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = {call}
    return g, y
"""

HAZARD = "    return x.sum().item()  # the hazard\n"
HARMLESS = "    return x * 2\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")


def _findings(root: Path, files: dict[str, str], absolute: bool) -> set[tuple[str, int, str, str]]:
    """(path relative to root, 1-based line, rule, severity) of every finding; files added in dict order."""
    _write(root, files)
    ws = Workspace([str(root)])
    for rel in files:
        ws.add_text(str(root / rel) if absolute else rel, (root / rel).read_text(encoding="utf-8"))
    out: set[tuple[str, int, str, str]] = set()
    for path, found in analyse_workspace(ws).items():
        rel = Path(path).relative_to(root).as_posix() if absolute else path
        out.update((rel, f.start_line + 1, f.rule, f.severity) for f in found)
    return out


def _hazard_line(text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if "the hazard" in line)


def _flagged(found: set[tuple[str, int, str, str]], path: str, line: int) -> bool:
    return any(p == path and ln == line and sev == "error" for p, ln, _r, sev in found)


PATH_STYLES = pytest.mark.parametrize("absolute", [True, False], ids=["absolute", "root-relative"])

# ---- reach through a relative import ------------------------------------------------------------------------

UTILS = "def sync_loss(x):\n" + HAZARD
DECOY_UTILS = "def sync_loss(x):\n" + HARMLESS


@PATH_STYLES
def test_two_dots_reach_the_parent_package(tmp_path: Path, absolute: bool) -> None:
    files = {
        "utils.py": DECOY_UTILS,  # a last-name lookup of `utils` takes these, added first
        "other/__init__.py": "",
        "other/utils.py": DECOY_UTILS,
        "pkg/__init__.py": "",
        "pkg/utils.py": UTILS,
        "pkg/sub/__init__.py": "",
        "pkg/sub/run.py": CAPTURE.format(imports="from ..utils import sync_loss", call="sync_loss(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert _flagged(found, "pkg/utils.py", _hazard_line(UTILS)), found
    assert not any(p in ("utils.py", "other/utils.py") for p, *_ in found), found


@PATH_STYLES
def test_from_dot_import_a_submodule(tmp_path: Path, absolute: bool) -> None:
    b = "def step(x):\n" + HAZARD
    files = {
        "b.py": "def step(x):\n" + HARMLESS,
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/b.py": b,
        "pkg/sub/run.py": CAPTURE.format(imports="from . import b", call="b.step(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert _flagged(found, "pkg/sub/b.py", _hazard_line(b)), found
    assert not any(p == "b.py" for p, *_ in found), found


@PATH_STYLES
def test_from_dot_import_a_name_of_the_package_init(tmp_path: Path, absolute: bool) -> None:
    init = "def helper(x):\n" + HAZARD
    files = {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": init,
        "pkg/sub/run.py": CAPTURE.format(imports="from . import helper", call="helper(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert _flagged(found, "pkg/sub/__init__.py", _hazard_line(init)), found


@PATH_STYLES
def test_from_dot_module_import_a_class(tmp_path: Path, absolute: bool) -> None:
    b = "class C:\n    def run(self, x):\n" + "    " + HAZARD
    files = {
        "b.py": "class C:\n    def run(self, x):\n" + "    " + HARMLESS,
        "pkg/__init__.py": "",
        "pkg/b.py": b,
        "pkg/run.py": CAPTURE.format(imports="from .b import C", call="C().run(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert _flagged(found, "pkg/b.py", _hazard_line(b)), found
    assert not any(p == "b.py" for p, *_ in found), found


@PATH_STYLES
def test_relative_import_across_a_namespace_package(tmp_path: Path, absolute: bool) -> None:
    # `ns/` and `ns/tools/` have no __init__.py (namespace packages, as Megatron-LM's `megatron/`)
    sync = "def f(x):\n" + HAZARD
    files = {
        "tools/sync.py": "def f(x):\n" + HARMLESS,
        "ns/tools/sync.py": sync,
        "ns/core/__init__.py": "",
        "ns/core/run.py": CAPTURE.format(imports="from ..tools.sync import f", call="f(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert _flagged(found, "ns/tools/sync.py", _hazard_line(sync)), found
    assert not any(p == "tools/sync.py" for p, *_ in found), found


@PATH_STYLES
def test_a_package_init_reexport_through_relative_imports(tmp_path: Path, absolute: bool) -> None:
    model = "def forward(x):\n" + HAZARD
    files = {
        "model.py": "def forward(x):\n" + HARMLESS,
        "lib/__init__.py": "from .model import forward\n",
        "lib/model.py": model,
        "train.py": CAPTURE.format(imports="from lib import forward", call="forward(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert _flagged(found, "lib/model.py", _hazard_line(model)), found
    assert not any(p == "model.py" for p, *_ in found), found


def test_the_scan_cli_follows_a_relative_import(tmp_path: Path) -> None:
    _write(tmp_path, {
        "utils.py": DECOY_UTILS,
        "pkg/__init__.py": "",
        "pkg/utils.py": UTILS,
        "pkg/sub/__init__.py": "",
        "pkg/sub/run.py": CAPTURE.format(imports="from ..utils import sync_loss", call="sync_loss(x)"),
    })
    r = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--format", "json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    found = {(d["path"], d["line"], d["severity"]) for d in json.loads(r.stdout)["diagnostics"]}
    assert ("pkg/utils.py", _hazard_line(UTILS), "error") in found, (found, r.stderr)
    assert not any(p == "utils.py" for p, _ln, _s in found), found


# ---- a module outside the workspace is no local file of the same last name -------------------------------------

@PATH_STYLES
def test_torch_distributed_is_not_a_local_distributed_py(tmp_path: Path, absolute: bool) -> None:
    # lmdeploy: `from torch import distributed as dist; dist.all_reduce(x)` went to its own distributed.py
    files = {
        "app/__init__.py": "",
        "app/dist/__init__.py": "",
        "app/dist/distributed.py": "def all_reduce(x):\n" + HAZARD,
        "app/train.py": CAPTURE.format(imports="from torch import distributed as dist", call="dist.all_reduce(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert not any(p == "app/dist/distributed.py" for p, *_ in found), found


@PATH_STYLES
def test_torch_is_not_a_local_torch_package(tmp_path: Path, absolute: bool) -> None:
    # lightning-thunder: `torch.ones(...)` went to thunder/torch/__init__.py
    files = {
        "app/__init__.py": "",
        "app/torch/__init__.py": "def ones(x):\n" + HAZARD,
        "app/train.py": CAPTURE.format(imports="", call="torch.ones(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert not any(p == "app/torch/__init__.py" for p, *_ in found), found


def test_a_package_on_disk_is_one_when_the_workspace_holds_part_of_the_tree(tmp_path: Path) -> None:
    # the language server indexes a bounded part of a tree: app/__init__.py is on disk but not in the workspace
    _write(tmp_path, {"app/__init__.py": "", "app/torch/__init__.py": "def ones(x):\n" + HAZARD,
                      "app/train.py": CAPTURE.format(imports="", call="torch.ones(x)")})
    ws = Workspace([str(tmp_path)])
    for rel in ("app/torch/__init__.py", "app/train.py"):
        ws.add_text(str(tmp_path / rel), (tmp_path / rel).read_text(encoding="utf-8"))
    found = {Path(p).relative_to(tmp_path).as_posix() for p, fs in analyse_workspace(ws).items() if fs}
    assert "app/torch/__init__.py" not in found, found


@PATH_STYLES
def test_a_stdlib_module_is_not_a_local_module_of_its_name(tmp_path: Path, absolute: bool) -> None:
    files = {
        "app/__init__.py": "",
        "app/json.py": "def dumps(x):\n" + HAZARD,
        "app/train.py": CAPTURE.format(imports="import json", call="json.dumps(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert not any(p == "app/json.py" for p, *_ in found), found


# ---- lookup_module itself --------------------------------------------------------------------------------------

def _ws(root: Path, rels: list[str]) -> Workspace:
    ws = Workspace([str(root)])
    for rel in rels:
        ws.add_text(rel, "def f(x):\n    return x\n")
    return ws


def _found(ws: Workspace, module: str) -> str | None:
    ix = ws.lookup_module(module)
    return ix.path if ix is not None else None


def test_lookup_names_a_file_by_its_package_path_only(tmp_path: Path) -> None:
    ws = _ws(tmp_path, ["src/diffusers/__init__.py", "src/diffusers/models/__init__.py",
                        "src/diffusers/models/unet.py", "megatron/core/__init__.py", "megatron/core/utils.py",
                        "app/__init__.py", "app/torch/__init__.py", "app/dist/__init__.py",
                        "app/dist/distributed.py"])
    assert _found(ws, "src.diffusers.models.unet") == "src/diffusers/models/unet.py"
    assert _found(ws, "diffusers.models.unet") == "src/diffusers/models/unet.py"  # src/ is no package
    assert _found(ws, "models.unet") is None  # diffusers/ is one
    assert _found(ws, "megatron.core.utils") == "megatron/core/utils.py"
    assert _found(ws, "app.torch") == "app/torch/__init__.py"
    assert _found(ws, "torch") is None
    assert _found(ws, "torch.distributed") is None
    assert _found(ws, "distributed") is None


def test_lookup_from_inside_a_package_drops_only_the_roots_own_name(tmp_path: Path) -> None:
    root = tmp_path / "transformer_engine" / "pytorch"
    ws = _ws(root, ["__init__.py", "utils.py", "module/__init__.py", "module/linear.py", "distributed.py"])
    assert _found(ws, "transformer_engine.pytorch.utils") == "utils.py"
    assert _found(ws, "transformer_engine.pytorch.module.linear") == "module/linear.py"
    assert _found(ws, "torch.distributed") is None


def test_an_import_above_the_top_names_nothing(tmp_path: Path) -> None:
    files = {
        "utils.py": UTILS,
        "pkg/__init__.py": "",
        "pkg/run.py": CAPTURE.format(imports="from ...utils import sync_loss", call="sync_loss(x)"),
    }
    assert _findings(tmp_path, files, absolute=False) == set()


@PATH_STYLES
def test_a_copy_behind_a_capture_guard_reached_relatively_is_no_error(tmp_path: Path, absolute: bool) -> None:
    # flashinfer kda_kernels/sm120_prefill: reached once `from .runtime import` resolves; the copy runs only
    # outside a capture (`if capturing(): raise`), where `capturing` returns `is_available() and <guard>()`
    runtime = """\
        import torch


        def capturing() -> bool:
            return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


        def offsets(cu):
            if capturing():
                raise RuntimeError("warm up first")
            return cu.cpu().tolist()
        """
    files = {
        "pkg/__init__.py": "",
        "pkg/runtime.py": runtime,
        "pkg/run.py": CAPTURE.format(imports="from .runtime import offsets", call="offsets(x)"),
    }
    found = _findings(tmp_path, files, absolute)
    assert not any(p == "pkg/runtime.py" and sev == "error" for p, _ln, _r, sev in found), found
