# capture-nested-capture: a second `with torch.cuda.graph(...)` opened inside a running capture.
# DENPEX_EAGER=1: the same computation without capture (the reference for fixes).
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")


def step():
    return x * 2 + 1


def side():
    return x * 3


if os.environ.get("DENPEX_EAGER") == "1":
    x.copy_(new)
    out = step()
    extra = side()
    print("RESULT:", out.sum().item(), extra.sum().item(), out[0].item())
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        step()
        side()
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
g_side = torch.cuda.CUDAGraph()
x.copy_(new)
out = step()
with torch.cuda.graph(g_side):  # a capture inside the capture
    extra = side()
g_side.replay()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), extra.sum().item(), out[0].item())
