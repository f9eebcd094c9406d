# capture-side-stream-no-fork: switching to another stream inside capture without wait_stream (fork) or join.
import os

import torch

torch.manual_seed(0)
x = torch.randn(1 << 20, device="cuda")
new = torch.randn(1 << 20, device="cuda")
s2 = torch.cuda.Stream()


def step():
    y = x * 2
    with torch.cuda.stream(s2):  # s2 never waits on the capturing stream
        z = y + 1
    return z * 3


if os.environ.get("DENPEX_EAGER") == "1":
    out = (new * 2 + 1) * 3
    print("RESULT:", out.sum().item(), out[0].item())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
out = step()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), out[0].item())
