# cuda-904-capture-unjoined: side stream forked into the capture (wait_stream) but never joined back.
import os

import torch

torch.manual_seed(0)
x = torch.randn(1 << 20, device="cuda")
new = torch.randn(1 << 20, device="cuda")
s2 = torch.cuda.Stream()
z = torch.zeros(1 << 20, device="cuda")


def step():
    y = x * 2
    s2.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s2):
        z.copy_(y + 1)  # captured on s2 ...
    return y * 3  # ... but the origin stream never waits on s2


if os.environ.get("DENPEX_EAGER") == "1":
    out, zz = new * 6, new * 2 + 1
    print("RESULT:", out.sum().item(), zz.sum().item())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
out = step()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), z.sum().item())
