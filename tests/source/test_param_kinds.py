"""Tensor-ness that flows from callers into callees (resolve/param_kinds.py) and out of unpacked torch results
(FileIndex._element_kind): the mask in `keep = scores > t; scores[keep]` is known when a caller passes a tensor
for `scores`, through locals, comparisons and tuple unpacking, as in real post-processing code."""

from __future__ import annotations

from pathlib import Path

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace

MAIN = """\
import torch
from post import decode

model = torch.nn.Linear(4, 4).cuda()
x = torch.randn(8, 4, device="cuda")
with torch.no_grad():
    for _ in range(3):
        model(x)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = decode(model(x), 0.3)
"""


def _findings(tmp_path: Path, post: str, main: str = MAIN) -> set[tuple[int, str, str]]:
    ws = Workspace([str(tmp_path)])
    ws.add_file(str(tmp_path / "main.py"), main)
    ws.add_file(str(tmp_path / "post.py"), post)
    found = analyse_workspace(ws).get(str(tmp_path / "post.py"), [])
    return {(f.start_line + 1, f.rule, f.severity) for f in found}


def test_mask_from_a_comparison_of_a_parameter_two_calls_down(tmp_path: Path) -> None:
    post = """\
def select(scores, thresh):
    keep = scores > thresh
    return scores[keep]


def decode(logits, thresh):
    probs = logits.sigmoid()
    return select(probs, thresh)
"""
    assert (3, "capture-dynamic-shape-op", "error") in _findings(tmp_path, post)


def test_values_unpacked_from_a_torch_op_are_tensors(tmp_path: Path) -> None:
    post = """\
def select(scores, thresh):
    keep = scores > thresh
    return scores[keep]


def decode(logits, thresh):
    scores, labels = logits.sigmoid().max(dim=-1)
    return select(scores, thresh)
"""
    assert (3, "capture-dynamic-shape-op", "error") in _findings(tmp_path, post)


def test_a_python_number_passed_for_the_parameter_is_no_mask(tmp_path: Path) -> None:
    post = """\
def select(scores, thresh):
    keep = scores > thresh
    if keep:
        return 1
    return 0


def decode(logits, thresh):
    return select(0.5, thresh)
"""
    assert not {f for f in _findings(tmp_path, post) if f[2] == "error"}


def test_what_a_user_module_returns_unpacked_stays_unknown(tmp_path: Path) -> None:
    # a module's result may be a tuple of anything: `n` can be a Python int, so int(n) is no host read
    post = """\
import torch


class Head(torch.nn.Module):
    def forward(self, h):
        return h, 3


def decode(logits, thresh):
    head = Head()
    out, n = head(logits)
    return out * int(n)
"""
    assert not {f for f in _findings(tmp_path, post) if f[1] == "capture-item-sync"}


def test_a_closure_parameter_of_the_same_name_is_not_the_caller_binding(tmp_path: Path) -> None:
    post = """\
def decode(logits, thresh):
    def pick(logits):
        keep = logits > 0
        return keep
    mask = logits > thresh
    return pick
"""
    assert not {f for f in _findings(tmp_path, post) if f[2] == "error"}
