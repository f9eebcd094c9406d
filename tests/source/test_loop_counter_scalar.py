"""replay-frozen-python-scalar (DPX303) for a loop's counter read by a capture that runs once in that loop: every
later pass rebinds the counter and replays a graph that kept the first pass's value (realistic r07)."""

from __future__ import annotations

from pathlib import Path

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace

HEAD = """\
import logging

import torch

log = logging.getLogger("t")
sig = [0.1, 0.2, 0.3, 0.4]
x = torch.randn(8, device="cuda")
batches = [torch.randn(8, device="cuda") for _ in range(3)]


def step(x, i):
    return x * sig[i]


graph = None
"""


def _found(tmp_path: Path, loop: str) -> set[tuple[int, str, str]]:
    ws = Workspace([str(tmp_path)])
    ws.add_file(str(tmp_path / "main.py"), HEAD + loop)
    return {(f.start_line + 1, f.rule, f.severity) for found in analyse_workspace(ws).values() for f in found
            if f.rule == "replay-frozen-python-scalar"}


ONCE = """\
for i in {it}:
    if graph is None:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = {call}
    graph.replay()
"""


def test_a_counter_captured_once_and_replayed_each_pass_is_an_error(tmp_path: Path) -> None:
    assert _found(tmp_path, ONCE.format(it="range(3)", call="step(x, i)")) == {(20, "replay-frozen-python-scalar",
                                                                                 "error")}


def test_a_wrapped_range_counts(tmp_path: Path) -> None:
    assert _found(tmp_path, ONCE.format(it="list(range(3))", call="step(x, i)"))


def test_the_index_of_enumerate_counts(tmp_path: Path) -> None:
    loop = ONCE.replace("for i in {it}:", "for i, b in enumerate(batches):").format(call="step(x, i)")
    assert _found(tmp_path, loop)


def test_a_capture_in_every_pass_is_clean(tmp_path: Path) -> None:
    loop = ("for i in range(3):\n    graph = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(graph):\n"
            "        out = step(x, i)\n    graph.replay()\n")
    assert _found(tmp_path, loop) == set()


def test_a_counter_read_only_for_logging_is_clean(tmp_path: Path) -> None:
    assert _found(tmp_path, ONCE.format(it="range(3)", call="x * 2\n            log.info('step %d', i)")) == set()


def test_a_tensor_loop_target_is_not_a_counter(tmp_path: Path) -> None:
    assert _found(tmp_path, ONCE.replace("for i in {it}:", "for b in batches:").format(call="x * b")) == set()


def test_no_replay_in_the_loop_is_clean(tmp_path: Path) -> None:
    loop = ("for i in range(3):\n    if graph is None:\n        graph = torch.cuda.CUDAGraph()\n"
            "        with torch.cuda.graph(graph):\n            out = step(x, i)\n")
    assert _found(tmp_path, loop) == set()
