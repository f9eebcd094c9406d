"""The pre-commit hook (.pre-commit-hooks.yaml, id `denpex`) through `pre-commit try-repo`, as a user's commit
meets it: a staged file that adds a capture hazard fails the hook, a clean one passes.

pre-commit builds the hook's environment with pip from a clone of this repository's committed state (the
first call takes seconds to a minute, and needs the package index that `pip install -e '.[test]'` used).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

HAZARD = 'import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    v = torch.ones(1, device="cuda").item()\n'
CLEAN = 'import torch\nv = torch.ones(1, device="cuda").item()\n'
PIP_OFFLINE = ("NewConnectionError", "Temporary failure in name resolution", "No matching distribution found")

pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                                reason="needs git and a git checkout of the repository")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of the committed repository (the working tree of a checkout may hold others' half-done files)."""
    clone = tmp_path_factory.mktemp("hookrepo") / "denpex"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, capture_output=True, timeout=120)
    return clone


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")  # the hook environment is built once for the module


def try_repo(project: Path, hook_repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    r = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "denpex"], cwd=project,
                       capture_output=True, text=True, timeout=600, env=env)
    if r.returncode != 0 and os.environ.get("CI") != "true" and any(s in r.stdout + r.stderr for s in PIP_OFFLINE):
        pytest.skip("pre-commit could not install the hook's environment (no package index here)")
    return r


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    _git(tmp_path, "init", "--quiet")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    _git(tmp_path, "add", *files)
    return tmp_path


def test_commit_adding_a_capture_hazard_fails(tmp_path: Path, hook_repo: Path, pre_commit_home: Path) -> None:
    pytest.importorskip("pre_commit")
    r = try_repo(project(tmp_path, {"train.py": HAZARD, "clean.py": CLEAN}), hook_repo, pre_commit_home)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "- hook id: denpex" in r.stdout
    assert "train.py:4:9: DPX101 [error]" in r.stdout
    assert "clean.py:" not in r.stdout and "Found 1 finding in 2 files." in r.stdout


def test_clean_commit_passes(tmp_path: Path, hook_repo: Path, pre_commit_home: Path) -> None:
    pytest.importorskip("pre_commit")
    r = try_repo(project(tmp_path, {"clean.py": CLEAN}), hook_repo, pre_commit_home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "denpex (CUDA-graph capture hazards)" in r.stdout and "Passed" in r.stdout


def test_staged_notebook_with_a_hazard_fails(tmp_path: Path, hook_repo: Path, pre_commit_home: Path) -> None:
    pytest.importorskip("pre_commit")
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": HAZARD.splitlines(keepends=True)}],
          "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    r = try_repo(project(tmp_path, {"exp.ipynb": json.dumps(nb, indent=1)}), hook_repo, pre_commit_home)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "exp.ipynb:cell 1:4:9: DPX101 [error]" in r.stdout
