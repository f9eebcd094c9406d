"""Two links of real call chains: a `@contextmanager` in another file that opens the capture with
`capture_begin()` before its `yield` (regions.contextmanager_wrappers), and what a function of the same file
returns, with its parameters taken from the call (FileIndex._return_kind)."""

from __future__ import annotations

from pathlib import Path

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace

OPENER = """\
import contextlib

import torch


@contextlib.contextmanager
def graph_capture(graph, pool=None):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        graph.capture_begin(pool=pool)
        try:
            yield graph
        finally:
            graph.capture_end()
    torch.cuda.current_stream().wait_stream(stream)
"""

SCORING = """\
import torch


def standardize(err, mean, std):
    return (err - mean) / std


def window_scores(x, mean, std, thresh):
    err = x.pow(2).mean(dim=1)
    z = standardize(err, mean, std)
    alarm = z > thresh
    return z[alarm].sum()
"""

MAIN = """\
import torch
from capture import graph_capture
from scoring import window_scores

x = torch.randn(64, 8, device="cuda")
g = torch.cuda.CUDAGraph()
with graph_capture(g):
    peak = window_scores(x, 0.0, 1.0, 3.0)
"""


def _found(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int, str, str]]:
    ws = Workspace([str(tmp_path)])
    for name, text in files.items():
        ws.add_file(str(tmp_path / name), text)
    return {(Path(p).name, f.start_line + 1, f.rule, f.severity)
            for p, found in analyse_workspace(ws).items() for f in found}


def test_capture_begin_contextmanager_of_another_file_opens_the_capture(tmp_path: Path) -> None:
    found = _found(tmp_path, {"capture.py": OPENER, "scoring.py": SCORING, "main.py": MAIN})
    assert ("scoring.py", 12, "capture-dynamic-shape-op", "error") in found


def test_a_contextmanager_that_yields_before_capture_begin_opens_nothing(tmp_path: Path) -> None:
    late = OPENER.replace("        graph.capture_begin(pool=pool)\n        try:\n            yield graph\n",
                          "        try:\n            yield graph\n            graph.capture_begin(pool=pool)\n")
    assert late != OPENER
    found = _found(tmp_path, {"capture.py": late, "scoring.py": SCORING, "main.py": MAIN})
    assert not {f for f in found if f[0] == "scoring.py"}


def test_a_returned_python_number_is_no_tensor(tmp_path: Path) -> None:
    scoring = SCORING.replace("return (err - mean) / std", "return 2.0")
    found = _found(tmp_path, {"capture.py": OPENER, "scoring.py": scoring, "main.py": MAIN})
    assert not {f for f in found if f[0] == "scoring.py" and f[2] == "capture-dynamic-shape-op"}


def test_returns_that_disagree_are_unknown(tmp_path: Path) -> None:
    scoring = SCORING.replace("    return (err - mean) / std\n",
                              "    if std is None:\n        return 0.0\n    return (err - mean) / std\n")
    found = _found(tmp_path, {"capture.py": OPENER, "scoring.py": scoring, "main.py": MAIN})
    assert not {f for f in found if f[0] == "scoring.py" and f[2] == "capture-dynamic-shape-op"}
