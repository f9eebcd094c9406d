"""A call of a value that is one of several classes (a factory whose branches build different modules) runs only
the members whose signature can take the call's arguments. TransformerEngine's
tests/pytorch/nvfp4/test_nvfp4_weight_swizzle_cache.py calls `module(x, is_first_microbatch=False)` on the result
of a factory returning one of four modules; one of them requires a second positional argument (`m_splits`), so that
call cannot run its forward, and a host copy in that forward was reported as an error of the capture
(bench/ecosystem/verdicts.tsv, false). Each case is a minimal program with a twin that keeps the hazard flagged."""

from __future__ import annotations

from pathlib import Path

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace


def _findings(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int, str, str]]:
    ws = Workspace([str(tmp_path)])
    for name, text in files.items():
        ws.add_file(str(tmp_path / name), text)
    return {(Path(p).name, f.start_line + 1, f.rule, f.severity)
            for p, found in analyse_workspace(ws).items() for f in found}


MODS = """\
import torch


class Plain(torch.nn.Module):
    def forward(self, x, scale=None):
        return x * x.sum().item()


class Split(torch.nn.Module):
    def forward(self, x, splits: torch.Tensor{default}, scale=None):
        sizes = torch.ones(4, device="cuda").tolist()
        return x * len(sizes) * splits
"""

MAIN = """\
import torch
from mods import Plain, Split


def make(kind):
    if kind == "plain":
        return Plain().cuda()
    if kind == "split":
        return Split().cuda()
    raise ValueError(kind)


def run(kind):
    m = make(kind)
    x = torch.randn(8, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = {call}
    return y
"""

HOST_COPY = ("mods.py", 11, "capture-host-copy", "error")
ITEM = ("mods.py", 6, "capture-item-sync", "error")


def test_a_member_whose_required_parameter_the_call_leaves_out_is_not_run(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"mods.py": MODS.format(default=""), "main.py": MAIN.format(call="m(x, scale=2)")})
    assert HOST_COPY not in found and ITEM in found, found


def test_a_member_that_cannot_take_a_keyword_the_call_passes_is_not_run(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"mods.py": MODS.format(default="=None"), "main.py": MAIN.format(call="m(x, splits=x)")})
    # Plain.forward has no `splits` and no **kwargs: only Split runs, and its host copy stays an error
    assert ITEM not in found and HOST_COPY in found, found


def test_a_member_with_kwargs_takes_any_keyword(tmp_path: Path) -> None:
    mods = MODS.format(default="=None").replace("def forward(self, x, scale=None):", "def forward(self, x, **kw):")
    found = _findings(tmp_path, {"mods.py": mods, "main.py": MAIN.format(call="m(x, splits=x)")})
    assert ITEM in found and HOST_COPY in found, found


def test_the_call_that_passes_the_argument_stays_flagged(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"mods.py": MODS.format(default=""), "main.py": MAIN.format(call="m(x, x)")})
    assert HOST_COPY in found and ITEM in found, found


def test_a_default_for_the_parameter_keeps_the_member(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"mods.py": MODS.format(default="=None"), "main.py": MAIN.format(call="m(x)")})
    assert HOST_COPY in found and ITEM in found, found


def test_a_splat_call_keeps_every_member(tmp_path: Path) -> None:
    main = MAIN.format(call="m(*args)").replace("    x = torch", "    args = (torch.randn(8), )\n    x = torch")
    found = _findings(tmp_path, {"mods.py": MODS.format(default=""), "main.py": main})
    assert HOST_COPY in found and ITEM in found, found


def test_one_class_alone_is_not_filtered(tmp_path: Path) -> None:
    # no union: what the call cannot bind is left to the rest of the analysis, as before
    main = MAIN.format(call="m(x)").replace("    m = make(kind)", "    m = Split().cuda()")
    found = _findings(tmp_path, {"mods.py": MODS.format(default=""), "main.py": main})
    assert HOST_COPY in found, found
