"""Pathological inputs cannot stall a scan (issue 6): a module with hundreds of capture regions is analysed in
time near-linear in its size, and files with no file name (an editor's "" or bare file:// URI) are accepted."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from denpex.source import Workspace, analyse_source
from denpex.source.resolve.workspace import module_names

SCENARIO = Path(__file__).resolve().parents[1] / "lsp" / "workspace" / "gpu" / "scenarios" / "01_item_in_capture.py"

HEAD = "import torch, time\nx = torch.randn(3, device='cuda')\ns = 2\nlr = 0.1\ng = torch.cuda.CUDAGraph()\n"

# one module-level chunk per capture region, each reading names that the rest of the module rebinds, deletes,
# replays or copies into: every detector that looks at the code before or after a capture has work to do
CHUNKS: dict[str, Callable[[int], str]] = {
    "graph": lambda i: (f"w{i} = torch.randn(8, 8, device='cuda')\ng{i} = torch.cuda.CUDAGraph()\n"
                        f"with torch.cuda.graph(g{i}):\n    y{i} = torch.matmul(w{i}, x) * lr\n    print('step')\n"
                        f"g{i}.replay()\nlr = 0.5\nkeep{i} = y{i}\nx = torch.zeros(3)\ndel w{i}\n"),
    "same_graph": lambda i: ("with torch.cuda.graph(g):\n    y = x * s\n    t = time.time()\n"
                             "g.replay()\nx.copy_(torch.ones(3))\nkeep = y\n"),
    "capture_begin": lambda i: (f"g{i}.capture_begin()\ny = x.mm(x)\nv = y.item()\ng{i}.capture_end()\ng{i}.replay()\n"
                                "x = torch.ones(3)\n"),
    "compile": lambda i: f"f{i} = torch.compile(step, mode='reduce-overhead')\na{i} = f{i}(x)\nb{i} = f{i}(x)\nprint(a{i})\n",
}


def module(n: int) -> str:
    return HEAD + "".join(chunk(i) for i in range(n) for chunk in CHUNKS.values())


@pytest.fixture
def query_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the tree-sitter queries the detectors run (their natural unit of work over a range of the file)."""
    count = [0]
    import denpex.source.rules as rules_pkg

    rules_pkg.registry()  # every rule module imported, so that each one's names are patched below
    detectors = [m for name, m in sys.modules.items()
                 if name.startswith(("denpex.source.rules.", "denpex.source.engine.around", "denpex.source.engine.facts"))]
    for mod in detectors:
        for name in ("run_query", "run_query_range", "QueryCursor"):
            real = getattr(mod, name, None)
            if real is None:
                continue

            def counted(*a: object, _real: Callable[..., object] = real) -> object:
                count[0] += 1
                return _real(*a)

            monkeypatch.setattr(mod, name, counted)
    yield count


def test_queries_do_not_grow_with_the_number_of_captures(query_runs: list[int]) -> None:
    counts = []
    for n in (10, 200):
        query_runs[0] = 0
        findings = analyse_source(module(n), f"many_{n}.py")
        assert len(findings) > 2 * n
        counts.append(query_runs[0])
    assert counts[0] == counts[1], counts  # per file and scope, not per capture


def test_eight_hundred_captures_do_not_stall() -> None:
    # the robustness suite's case: the failing scenario repeated 800 times (447 KB); it took 67 s when each
    # capture rescanned the rest of the module. The bound only guards against a hang (about 1 s here).
    text = SCENARIO.read_text() * 800
    t = time.perf_counter()
    findings = analyse_source(text, "scenario_x800.py")
    assert time.perf_counter() - t < 10
    assert len([f for f in findings if f.rule == "replay-rebound-static-input"]) == 799
    t = time.perf_counter()
    analyse_source(module(200), "mixed_x200.py")  # 800 captures of four kinds
    assert time.perf_counter() - t < 10


@pytest.mark.parametrize("path", ["", ".", "/", "\\"])
def test_paths_without_a_file_name(path: str) -> None:
    assert module_names(path) == []
    ws = Workspace(["/tmp"])
    text = "import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    v = x.sum().item()\n"
    ws.add_text(path, text)
    ws.add_text("/tmp/other.py", "import torch\n")
    assert [f.rule for f in analyse_source(text, path, workspace=ws)] == ["capture-item-sync"]
    ws.remove_file(path)
    assert len(ws) == 1
