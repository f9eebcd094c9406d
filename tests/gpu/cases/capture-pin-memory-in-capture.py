# capture-pin-memory-in-capture: a pinned staging buffer allocated inside `with torch.cuda.graph(g)`.
# DENPEX_EAGER=1: the same computation without capture (the reference for fixes).
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")


def step():
    return x * 2 + 1


if os.environ.get("DENPEX_EAGER") == "1":
    x.copy_(new)
    out = step()
    print("RESULT:", out.sum().item(), out.abs().sum().item(), out[0].item())
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    staging = torch.empty(4096, pin_memory=True)  # cudaHostAlloc while the stream is capturing
    out = step()
x.copy_(new)
g.replay()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), out.abs().sum().item(), out[0].item())
