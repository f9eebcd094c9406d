# replay-nested-static-input: the replay helper copies only top-level tensors; the mask in the extras dict keeps
# the first batch's values.
import os

import torch

torch.manual_seed(0)


def copy_nested_(dst, src):
    # copy src into the static dst in place, down to the tensors nested in dicts, lists and tuples
    if isinstance(dst, torch.Tensor):
        dst.copy_(src)
    elif isinstance(dst, dict):
        for k in dst:
            copy_nested_(dst[k], src[k])
    elif isinstance(dst, (list, tuple)):
        for d, s in zip(dst, src):
            copy_nested_(d, s)


def clone_arg(a):
    if isinstance(a, torch.Tensor):
        return a.clone()
    if isinstance(a, dict):
        return {k: clone_arg(v) for k, v in a.items()}
    return a


def fn(x, extras):
    return (x * extras["mask"]).sum(-1)


class Graphed:
    def __init__(self, f):
        self.f = f
        self.graph = None

    def _refresh(self, args):
        for dst, src in zip(self.static_args, args, strict=False):
            copy_nested_(dst, src)

    def __call__(self, *args):
        if self.graph is None:
            self.static_args = [clone_arg(a) for a in args]
            self.f(*self.static_args)  # warm-up
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_out = self.f(*self.static_args)
        self._refresh(args)
        self.graph.replay()
        return self.static_out


batches = [(torch.randn(8, 32, device="cuda"), {"mask": (torch.rand(8, 32, device="cuda") > 0.5).float()})
           for _ in range(4)]
if os.environ.get("DENPEX_EAGER") == "1":
    sums = [fn(x, e).sum().item() for x, e in batches]
else:
    g = Graphed(fn)
    sums = [g(x, e).sum().item() for x, e in batches]
print("RESULT:", *sums)
