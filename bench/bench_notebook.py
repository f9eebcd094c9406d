"""Benchmark `denpex scan` on a Jupyter notebook against `ruff check` on the same notebook, and against
`denpex scan` of the same code as one .py file (the cost of reading cells, blanking magics and mapping positions
back), all in the same run.

    python bench/bench_notebook.py [--cells N]

The notebook is built from the GPU scenarios in tests/data/gpu/scenarios: one code cell per scenario (each
behind a markdown cell and with a `%time` line magic), so it holds real capture hazards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCENARIOS = REPO / "tests" / "data" / "gpu" / "scenarios"


def build(dest: Path, cells: int) -> tuple[Path, Path]:
    files = sorted(SCENARIOS.glob("*.py"))
    sources = [f.read_text(encoding="utf-8") for f in files]
    while len(sources) < cells:
        sources += sources
    sources = sources[:cells]
    nb_cells = []
    for i, src in enumerate(sources):
        nb_cells.append({"cell_type": "markdown", "metadata": {}, "source": [f"## scenario {i}"]})
        nb_cells.append({"cell_type": "code", "execution_count": i + 1, "metadata": {}, "outputs": [],
                         "source": ("%time _ = 0\n" + src).splitlines(keepends=True)})
    nb = {"cells": nb_cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    ipynb = dest / "scenarios.ipynb"
    ipynb.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    py = dest / "scenarios_as_one_file.py"
    py.write_text("\n".join("\n" + s for s in sources), encoding="utf-8")  # the magic line as a blank line
    return ipynb, py


def timed(cmds: dict[str, list[str]], cwd: Path, reps: int) -> dict[str, tuple[float, str]]:
    """Median wall time of each command; the commands take turns, so a busy machine slows them alike."""
    runs: dict[str, list[float]] = {k: [] for k in cmds}
    last: dict[str, str] = {}
    for _ in range(reps):
        for name, cmd in cmds.items():
            t = time.perf_counter()
            r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
            runs[name].append(time.perf_counter() - t)
            last[name] = (r.stdout.strip().splitlines() or [""])[-1]
    return {k: (statistics.median(v), last[k]) for k, v in runs.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        ipynb, py = build(d, args.cells)
        lines = py.read_text(encoding="utf-8").count("\n")
        denpex = [sys.executable, "-m", "denpex", "scan"]
        cmds = {"nb": [*denpex, ipynb.name], "py": [*denpex, py.name]}
        ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
        if Path(ruff).exists():
            cmds["ruff"] = [ruff, "check", "--no-cache", "--isolated", "--select", "F", ipynb.name]
        t = timed(cmds, d, args.reps)
        (nb_t, nb_out), (py_t, py_out) = t["nb"], t["py"]
        print(f"notebook: {args.cells} code cells, {lines} lines, {ipynb.stat().st_size // 1024} KiB")
        print(f"denpex scan .ipynb      {nb_t * 1000:8.0f} ms   {nb_out}")
        print(f"denpex scan same as .py {py_t * 1000:8.0f} ms   {py_out}   (notebook / .py: {nb_t / py_t:.2f}x)")
        if "ruff" in t:
            ruff_t = t["ruff"][0]
            print(f"ruff check .ipynb       {ruff_t * 1000:8.0f} ms   (denpex / ruff: {nb_t / ruff_t:.2f}x)")
        else:
            print("ruff check: not installed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
