# replay-output-kept-without-clone: keeping a reference to the graph's static output across replays.
# Silent: the next replay overwrites it.
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
a = torch.randn(4096, device="cuda")
b = torch.randn(4096, device="cuda")


def eager_reference():
    out_a, out_b = a * 2, b * 2
    print("RESULT:", out_a.sum().item(), out_b.sum().item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = x * 2
x.copy_(a)
g.replay()
out_a = static_y.clone()  # alias, not a copy
x.copy_(b)
g.replay()
out_b = static_y
torch.cuda.synchronize()
print("RESULT:", out_a.sum().item(), out_b.sum().item())
