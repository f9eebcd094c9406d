# replay-frozen-python-scalar: a Python float used inside capture is baked into the graph; changing it later
# is ignored. Silent.
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")


def eager_reference():
    out = x * 3.0
    print("RESULT:", out.sum().item(), out[0].item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

scale = 2.0
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = x * scale
scale = 3.0  # e.g. an LR / temperature schedule
g.replay()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), out[0].item())
