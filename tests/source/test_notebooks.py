"""`denpex scan` on Jupyter notebooks, as a subprocess: cells as one program, magics blanked, cell:line positions
in text/JSON/SARIF/GitHub output, `--fix` touching only the edited source strings, malformed notebooks."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastjsonschema
import pytest

SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"


def code(source: list[str], n: int | None = None, outputs: list[Any] | None = None) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": n, "metadata": {}, "outputs": outputs or [], "source": source}


def notebook(cells: list[dict[str, Any]], language: str = "python") -> dict[str, Any]:
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "K", "language": language, "name": "k"},
                                         "language_info": {"name": language}},
            "nbformat": 4, "nbformat_minor": 5}


# cell 1 markdown; cell 2 defines the function (after a line magic); cell 3 a shell escape; cell 4 the capture
CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Capture demo\n", "Notes."]},
    code(["%load_ext autoreload\n", "import torch\n", "\n", "def step(x):\n", "    s = x.sum().item()\n",
          "    return x * s\n"], 1),
    code(["!nvidia-smi\n", "x = torch.randn(8, device=\"cuda\")\n", "g = torch.cuda.CUDAGraph()"], 2,
         [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}]),
    code(["with torch.cuda.graph(g):\n", "    y = step(x)\n", "    print(y)"], 3),
]


def write(path: Path, nb: dict[str, Any], **dump: Any) -> str:
    text = json.dumps(nb, **({"indent": 1, "ensure_ascii": False} | dump)) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def scan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "denpex", "scan", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_cells_are_one_program_and_positions_are_cell_lines(tmp_path: Path) -> None:
    write(tmp_path / "nb.ipynb", notebook(CELLS))
    r = scan(tmp_path, "nb.ipynb")
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    # the capture in cell 4 reaches step() of cell 2; the magic and the shell escape moved no line
    assert lines[0].startswith("nb.ipynb:cell 2:5:9: DPX101 [error] ")
    assert lines[0].endswith("(captured at nb.ipynb:cell 4:1) [unsafe fix]")
    assert lines[1].startswith("nb.ipynb:cell 4:3:5: DPX")
    assert lines[-1] == "Found 2 findings in 1 file."


def test_json_has_cell_and_lines_within_it(tmp_path: Path) -> None:
    write(tmp_path / "nb.ipynb", notebook(CELLS))
    d = json.loads(scan(tmp_path, "--format", "json", "nb.ipynb").stdout)["diagnostics"][0]
    assert (d["path"], d["cell"], d["line"], d["column"], d["end_line"], d["end_column"]) == \
        ("nb.ipynb", 2, 5, 9, 5, 23)
    assert d["capture_site"] == {"path": "nb.ipynb", "line": 1, "cell": 4}


def test_sarif_validates_and_points_into_the_stored_file(tmp_path: Path) -> None:
    text = write(tmp_path / "nb.ipynb", notebook(CELLS))
    r = scan(tmp_path, "--format", "sarif", "nb.ipynb")
    data = json.loads(r.stdout)
    validate = fastjsonschema.compile(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    validate(copy.deepcopy(data))  # the validator fills in the schema's defaults
    res = data["runs"][0]["results"][0]
    loc = res["locations"][0]
    region = loc["physicalLocation"]["region"]
    stored = text.splitlines()
    # the region is the span of `x.sum().item()` in the .ipynb text, where code scanning shows it
    assert stored[region["startLine"] - 1][region["startColumn"] - 1:region["endColumn"] - 1] == "x.sum().item()"
    assert loc["properties"] == {"notebookCell": 2, "cellLine": 5, "cellColumn": 9}
    assert res["message"]["text"].endswith("(cell 2, line 5)")
    site = res["relatedLocations"][0]
    assert "with torch.cuda.graph(g)" in stored[site["physicalLocation"]["region"]["startLine"] - 1]
    # the schema check is a real one: a region line 0 is refused
    region["startLine"] = 0
    with pytest.raises(fastjsonschema.JsonSchemaException):
        validate(data)


def test_github_annotations_point_into_the_stored_file(tmp_path: Path) -> None:
    text = write(tmp_path / "nb.ipynb", notebook(CELLS))
    out = scan(tmp_path, "--format", "github", "nb.ipynb").stdout.splitlines()[0]
    assert out.startswith("::error file=nb.ipynb,line=")
    line = int(out.split("line=")[1].split(",")[0])
    assert ".item()" in text.splitlines()[line - 1] and out.endswith("(cell 2, line 5)")


def test_fix_changes_only_the_edited_source_strings(tmp_path: Path) -> None:
    # a layout nbformat does not write (indent 2, \\u escapes, no trailing newline): it must survive as it is
    cells = [{"cell_type": "markdown", "metadata": {"tags": ["é"]}, "source": "Résumé"},
             code(["import torch\n", "x = torch.randn(8, device='cuda')  # café\n", "g = torch.cuda.CUDAGraph()\n",
                   "with torch.cuda.graph(g):\n", "    y = x * 2\n", "    %time z = 1\n",
                   "    y[2] = 3.0\n", "    print(y)\n", "    w = y * 3"], 7,
                  [{"data": {"image/png": "iVBORw0KGgo="}, "metadata": {}, "output_type": "display_data"}])]
    path = tmp_path / "nb.ipynb"
    before = json.dumps(notebook(cells), indent=2, ensure_ascii=True)
    path.write_bytes(before.encode())
    r = scan(tmp_path, "--fix", "nb.ipynb")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("Fixed 1 file.")
    after = path.read_bytes().decode()
    assert "%time z = 1" in after  # the magic in the capture is kept, and no fix was refused for it
    expect = before.replace('"    y[2] = 3.0\\n"', '"    y[2].fill_(3.0)\\n"')
    # the guard adds a line: one new string, written with the file's own separator
    expect = expect.replace('"    print(y)\\n"', '"    if not torch.cuda.is_current_stream_capturing():\\n",\n'
                            '        "        print(y)\\n"')
    assert after == expect
    nb = json.loads(after)
    assert nb["cells"][1]["source"][6:9] == ["    y[2].fill_(3.0)\n",
                                             "    if not torch.cuda.is_current_stream_capturing():\n",
                                             "        print(y)\n"]


def test_fix_keeps_a_single_string_source_a_string(tmp_path: Path) -> None:
    src = "import torch\nx = torch.ones(4, device='cuda')\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    x[0] = 1.0"
    path = tmp_path / "nb.ipynb"
    before = write(path, notebook([code(src)]))  # type: ignore[arg-type]
    assert scan(tmp_path, "--fix", "nb.ipynb").returncode == 0
    assert path.read_text(encoding="utf-8") == before.replace("x[0] = 1.0", "x[0].fill_(1.0)")


def test_cell_magics_shell_assignments_and_help(tmp_path: Path) -> None:
    cells = [
        code(["%%bash\n", "with torch.cuda.graph(g):\n", "    print(x.item())\n"]),  # not Python: skipped
        code(["%%timeit\n", "import torch\n", "x = torch.ones(2, device='cuda')\n", "g = torch.cuda.CUDAGraph()\n",
              "files = !ls\n", "torch.cuda.graph?\n", "with torch.cuda.graph(g):\n", "    v = x.item()\n"]),
    ]
    write(tmp_path / "nb.ipynb", notebook(cells))
    r = scan(tmp_path, "nb.ipynb")
    assert r.stdout.splitlines() == [
        next(x for x in r.stdout.splitlines() if x.startswith("nb.ipynb:cell 2:8:9: DPX101 [error]")),
        "Found 1 finding in 1 file.",
    ], r.stdout


def test_other_languages_are_not_python(tmp_path: Path) -> None:
    write(tmp_path / "r.ipynb", notebook(CELLS, language="R"))
    r = scan(tmp_path, "r.ipynb")
    assert (r.returncode, r.stdout.strip()) == (0, "Found 0 findings in 1 file.")


def test_directory_walk_finds_notebooks_but_not_checkpoints(tmp_path: Path) -> None:
    write(tmp_path / "nb.ipynb", notebook(CELLS))
    (tmp_path / ".ipynb_checkpoints").mkdir()
    write(tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb", notebook(CELLS))
    r = scan(tmp_path)
    assert r.returncode == 1
    assert all(x.startswith("nb.ipynb:") for x in r.stdout.splitlines()[:-1])
    assert r.stdout.splitlines()[-1] == "Found 2 findings in 1 file."


def test_clean_notebook_exits_zero(tmp_path: Path) -> None:
    write(tmp_path / "nb.ipynb", notebook([code(["import torch\n", "print(torch.ones(1).item())"])]))
    r = scan(tmp_path, "nb.ipynb")
    assert (r.returncode, r.stdout.strip()) == (0, "Found 0 findings in 1 file.")


@pytest.mark.parametrize(("content", "reason"), [
    (b'{"cells": [', "invalid JSON"),
    (b"[1, 2]", 'no "cells" list'),
    (b'{"cells": [], "nbformat": 3}', "nbformat 3 is not supported"),
    (b'{"cells": [{"cell_type": "code", "source": 7}], "nbformat": 4}', "neither a string nor a list"),
    (b'{"cells": [7], "nbformat": 4}', "cell 1 is not an object"),
    (b'\xff\xfe{"cells": []}', "not UTF-8"),
    (b"", "invalid JSON"),
])
def test_malformed_notebook_is_one_line_and_exit_2(tmp_path: Path, content: bytes, reason: str) -> None:
    (tmp_path / "bad.ipynb").write_bytes(content)
    (tmp_path / "bad.py").write_text("import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
                                     "    v = torch.ones(1).item()\n")
    r = scan(tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("denpex: error: bad.ipynb: "), r.stderr
    assert reason in r.stderr and "Traceback" not in r.stderr
    assert r.stdout.startswith("bad.py:4:")  # the other files are still scanned and reported
