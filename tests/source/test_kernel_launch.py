"""`kernel[grid](...)` resolves to the `@triton.jit` function it launches (issue 19, the oracle's `kernel_launch`
misses: Megatron-LM's mamba2 ops, lightllm's and lmdeploy's kernels) and its body, GPU code, is not walked with the
host-side rules."""

from __future__ import annotations

from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.callgraph import EMPTY_ENV, Resolver
from denpex.source.resolve.workspace import Workspace
from denpex.source.syntax.parse import run_query

KERNELS = '''import triton
import triton.language as tl
from triton import jit


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    print(i)


@triton.autotune(configs=[], key=["n"])
@jit
def tuned_kernel(x_ptr, n):
    pass


def plain(x):
    return x
'''
MAIN = '''import torch
from kernels import plain, scale_kernel, tuned_kernel

x = torch.ones(4, device="cuda")
fns = [plain]
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    scale_kernel[(1,)](x, 4, BLOCK=4)
    tuned_kernel[(1,)](x, 4)
    y = fns[0](x)
g.replay()
'''


def _workspace() -> Workspace:
    ws = Workspace([])
    ws.add_file("/w/kernels.py", KERNELS)
    ws.add_file("/w/main.py", MAIN)
    return ws


def test_a_launch_resolves_to_the_kernel_it_launches() -> None:
    ws = _workspace()
    ix = ws.index("/w/main.py")
    assert ix is not None
    res = Resolver(ws.lookup_module)
    got: dict[str, list[tuple[str, str]]] = {}
    for call in run_query("(call) @c", ix.src.root).get("c", []):
        f = call.child_by_field_name("function")
        if f is not None and f.type == "subscript":
            got[ix.text(f).split("[")[0]] = [(t.func.name, t.role) for t in res.resolve_call(ix, call, EMPTY_ENV)]
    assert got["scale_kernel"] == [("scale_kernel", "kernel")]
    assert got["tuned_kernel"] == [("tuned_kernel", "kernel")]  # autotune over jit imported by name
    assert got["fns"] == [("plain", "")]  # an element of a list of functions: called and walked, no kernel launch


def test_a_kernel_body_is_not_walked() -> None:
    """`print` in the kernel would be a lost replay side effect on the host; in a Triton kernel it is device code."""
    found = analyse_workspace(_workspace(), config=ScanConfig())
    assert not any(p.endswith("kernels.py") for p, fs in found.items() if fs)
