# replay-freed-input: the graph's input (allocated outside the graph pool) is deleted, its memory reused by a
# new tensor, then the graph is replayed. Silent: the replay reads the new tensor's values.
import os

import torch

torch.manual_seed(0)
x = torch.randn(1 << 20, device="cuda")
x_vals = x.clone()


def eager_reference():
    out = x_vals * 2
    print("RESULT:", out.sum().item(), out[0].item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = x * 2
junk = torch.full((1 << 20,), 7.0, device="cuda")
g.replay()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), out[0].item())
