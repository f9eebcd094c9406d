# capture-explicit-sync: torch.cuda.synchronize() inside capture.
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")

if os.environ.get("DENPEX_EAGER") == "1":
    y = new * 2
    torch.cuda.synchronize()
    z = y + 1
    print("RESULT:", z.sum().item(), z[0].item())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
y = x * 2
torch.cuda.synchronize()
z = y + 1
torch.cuda.synchronize()
print("RESULT:", z.sum().item(), z[0].item())
