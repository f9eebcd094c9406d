"""`.tolist()` / `.numpy()` / `.cpu()` under capture is a device-to-host copy only on a GPU tensor.
TransformerEngine's GroupedLinear turns a host list of splits into a CPU tensor (`torch.tensor(m_splits,
device="cpu")`) and hands it on through a call with a splat (`linear_fn(*autograd_ctx, inp, m_splits, ...)`), so the
callee's `m_splits.tolist()` had a receiver of unknown kind and was an error of tests/pytorch/test_cuda_graphs.py's
capture (bench/ecosystem/verdicts.tsv, false). A known host tensor copies nothing; a receiver not known to be a
tensor is at most a warning; a CUDA tensor stays an error."""

from __future__ import annotations

from pathlib import Path

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace


def _findings(tmp_path: Path, text: str) -> set[tuple[int, str, str]]:
    ws = Workspace([str(tmp_path)])
    ws.add_file(str(tmp_path / "main.py"), text)
    return {(f.start_line + 1, f.rule, f.severity) for found in analyse_workspace(ws).values() for f in found}


PROGRAM = """\
import torch
from somewhere_else import make_splits


def step(x):
    splits = {splits}
    return x * len(splits.tolist())


x = torch.randn(8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = step(x)
"""


def test_a_host_tensor_tolist_copies_nothing(tmp_path: Path) -> None:
    found = _findings(tmp_path, PROGRAM.format(splits='torch.tensor([4, 4], device="cpu")'))
    assert not {f for f in found if f[1] == "capture-host-copy"}, found


def test_a_receiver_of_unknown_kind_is_at_most_a_warning(tmp_path: Path) -> None:
    found = _findings(tmp_path, PROGRAM.format(splits="make_splits(x)"))
    assert (7, "capture-host-copy", "warning") in found, found


def test_a_cuda_tensor_tolist_stays_an_error(tmp_path: Path) -> None:
    found = _findings(tmp_path, PROGRAM.format(splits='torch.tensor([4, 4], device="cuda")'))
    assert (7, "capture-host-copy", "error") in found, found
