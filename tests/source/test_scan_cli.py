"""`denpex scan` as a subprocess: formats, exit codes, rule selection, fixes, .gitignore, broken files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

BAD = textwrap.dedent("""
    import torch

    x = torch.randn(8, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2
        y[2] = 3.0
        print(y)
    """)
CLEAN = "import torch\n\nx = torch.randn(8, device='cuda')\ny = x.sum().item()\n"


def scan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "denpex", "scan", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def make(tmp_path: Path) -> Path:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_exit_codes_and_text(tmp_path: Path) -> None:
    make(tmp_path)
    r = scan(tmp_path, "clean.py")
    assert r.returncode == 0, r.stderr
    r = scan(tmp_path)
    assert r.returncode == 1
    assert "bad.py:8:5: DPX115 [error]" in r.stdout and "bad.py:9:5: DPX111" in r.stdout
    r = scan(tmp_path, "missing.py")
    assert r.returncode == 2 and r.stderr.startswith("denpex: error:") and len(r.stderr.splitlines()) == 1
    r = scan(tmp_path, "--select", "NOPE")
    assert r.returncode == 2


def test_json_schema(tmp_path: Path) -> None:
    make(tmp_path)
    r = scan(tmp_path, "--format", "json", "bad.py")
    data = json.loads(r.stdout)
    assert data["schema"] == "denpex.scan/1"
    d = data["diagnostics"][0]
    assert set(d) == {"path", "line", "column", "end_line", "end_column", "rule", "severity", "message",
                      "capture_site", "fixes", "call_path"}
    assert (d["line"], d["column"], d["rule"], d["severity"]) == (8, 5, "capture-host-copy", "error")
    assert d["capture_site"] == {"path": "bad.py", "line": 6}
    assert d["fixes"][0] == {"title": "Write the scalar with an in-place device kernel", "safety": "safe"}
    assert d["call_path"] == []  # in the capture itself: no call on the way


def test_sarif_and_github(tmp_path: Path) -> None:
    make(tmp_path)
    sarif = json.loads(scan(tmp_path, "--format", "sarif").stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert run["tool"]["driver"]["name"] == "denpex"
    assert {res["ruleId"] for res in run["results"]} == {"DPX115", "DPX111"}
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] in (8, 9)
    gh = scan(tmp_path, "--format", "github").stdout.splitlines()
    assert any(line.startswith("::error file=bad.py,line=8,col=5,") for line in gh)


def test_select_ignore(tmp_path: Path) -> None:
    make(tmp_path)
    out = json.loads(scan(tmp_path, "--format", "json", "--select", "DPX111").stdout)["diagnostics"]
    assert [d["rule"] for d in out] == ["capture-print-tensor"]
    out = json.loads(scan(tmp_path, "--format", "json", "--ignore", "capture-print-tensor,DPX115").stdout)
    assert out["diagnostics"] == []
    r = scan(tmp_path, "--ignore", "DPX1")
    assert r.returncode == 0


def test_fix_safe_then_unsafe(tmp_path: Path) -> None:
    make(tmp_path)
    r = scan(tmp_path, "--fix", "bad.py")
    text = (tmp_path / "bad.py").read_text()
    assert "y[2].fill_(3.0)" in text and "is_current_stream_capturing" in text
    assert r.returncode == 0, r.stdout
    compile(text, "bad.py", "exec")
    (tmp_path / "u.py").write_text("import torch\nwith torch.cuda.graph(g):\n    v = x.sum().item()\n")
    assert scan(tmp_path, "--fix", "u.py").returncode == 1  # only an unsafe fix exists
    assert scan(tmp_path, "--fix", "--unsafe-fixes", "u.py").returncode == 0
    assert ".item()" not in (tmp_path / "u.py").read_text()
    assert scan(tmp_path, "--unsafe-fixes", "u.py").returncode == 2


def test_gitignore_respected(tmp_path: Path) -> None:
    make(tmp_path)
    (tmp_path / ".gitignore").write_text("ignored/\n*.gen.py\n")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "x.py").write_text(BAD)
    (tmp_path / "y.gen.py").write_text(BAD)
    paths = {d["path"] for d in json.loads(scan(tmp_path, "--format", "json").stdout)["diagnostics"]}
    assert paths == {"bad.py"}


def test_syntax_error_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "half.py").write_text(BAD + "\ndef oops(:\n    return [\n")
    out = json.loads(scan(tmp_path, "--format", "json").stdout)["diagnostics"]
    assert {d["line"] for d in out} == {8, 9}


def test_pyproject_config(tmp_path: Path) -> None:
    make(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.denpex]\nignore = ["DPX111"]\n[tool.denpex.severity]\ncapture-host-copy = "warning"\n')
    out = json.loads(scan(tmp_path, "--format", "json").stdout)["diagnostics"]
    assert [(d["rule"], d["severity"]) for d in out] == [("capture-host-copy", "warning")]
    (tmp_path / "pyproject.toml").write_text('[tool.denpex]\nbogus = 1\n')
    assert scan(tmp_path).returncode == 2


def test_pyproject_graphed_callables(tmp_path: Path) -> None:
    src = ("import torch\nfrom mylib.graphs import graphed\n\n\ndef body(x):\n    return x.item()\n\n\n"
           "g = graphed(body)\n")
    (tmp_path / "m.py").write_text(src)
    assert json.loads(scan(tmp_path, "--format", "json").stdout)["diagnostics"] == []
    (tmp_path / "pyproject.toml").write_text('[tool.denpex]\ngraphed-callables = ["mylib.graphs.graphed"]\n')
    out = json.loads(scan(tmp_path, "--format", "json").stdout)["diagnostics"]
    assert [(d["rule"], d["line"], d["capture_site"]["line"]) for d in out] == [("capture-item-sync", 6, 9)]
    (tmp_path / "pyproject.toml").write_text('[tool.denpex]\ngraphed-callables = "mylib.graphs.graphed"\n')
    bad = scan(tmp_path)
    assert bad.returncode == 2 and "graphed-callables must be a list of strings" in bad.stderr
