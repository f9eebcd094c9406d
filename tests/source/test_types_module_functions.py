"""A call of an imported module's function (`math.sqrt(n)`, `math.isfinite(v)`) is not a tensor method, even where
the function's name is one (`sqrt`, `isfinite`): flashinfer gdn_fused_decode.py:232/417/434 and kda_prefill.py:267
were false errors from that. A tensor's own method keeps its tensor kind."""

from __future__ import annotations

from pathlib import Path

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace

TEMPLATE = """\
import math

import numpy as np
import torch


def step(x, scale=None):
{body}
    return x


x = torch.randn(8, 8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = step(x)
"""


def _found(tmp_path: Path, body: str) -> set[tuple[int, str, str]]:
    ws = Workspace([str(tmp_path)])
    ws.add_file(str(tmp_path / "main.py"), TEMPLATE.format(body=body))
    return {(f.start_line + 1, f.rule, f.severity) for found in analyse_workspace(ws).values() for f in found}


def test_math_functions_of_a_shape_are_python_numbers(tmp_path: Path) -> None:
    body = ("    if scale is None or scale == 0.0:\n"
            "        scale = 1.0 / math.sqrt(x.shape[-1])\n"
            "    if not math.isfinite(float(scale)):\n"
            "        raise ValueError\n"
            "    n = int(math.sqrt(x.shape[0]))")
    assert _found(tmp_path, body) == set()


def test_a_numpy_function_is_no_tensor_either(tmp_path: Path) -> None:
    assert _found(tmp_path, "    if np.sqrt(x.shape[0]) > 2:\n        pass") == set()


def test_the_tensors_own_sqrt_stays_a_tensor(tmp_path: Path) -> None:
    found = _found(tmp_path, "    if x.sqrt().sum() > 0:\n        pass")
    assert (8, "capture-implicit-bool", "error") in found, found


def test_a_torch_function_stays_a_tensor(tmp_path: Path) -> None:
    found = _found(tmp_path, "    if torch.sqrt(x).sum() > 0:\n        pass")
    assert (8, "capture-implicit-bool", "error") in found, found
