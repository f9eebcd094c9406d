# capture-item-sync: .item() (device->host sync) inside `with torch.cuda.graph(g)`.
# DENPEX_EAGER=1: the same computation without capture (the reference for fixes).
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")


def step():
    y = x * 2
    scale = y.abs().max().item()  # host sync while the stream is capturing
    return y / scale


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
x.copy_(new)
out = step()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), out.abs().sum().item(), out[0].item())
