# capture-host-copy (variant): torch.tensor([...], device="cuda") inside capture (H2D copy of a fresh CPU buffer).
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")

if os.environ.get("DENPEX_EAGER") == "1":
    c = torch.tensor([1.0, 2.0, 3.0, 4.0], device="cuda")
    out = new[:4] * c
    print("RESULT:", *out.tolist())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
c = torch.tensor([1.0, 2.0, 3.0, 4.0], device="cuda")
out = x[:4] * c
torch.cuda.synchronize()
print("RESULT:", *out.tolist())
