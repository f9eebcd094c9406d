# capture-host-copy (variant): `y[idx] = 3.0` (Python scalar written into a CUDA tensor) inside capture.
import os

import torch

x = torch.zeros(8, device="cuda")  # static input
new = torch.arange(8, dtype=torch.float32, device="cuda")
idx = 2

if os.environ.get("DENPEX_EAGER") == "1":
    y = new * 2
    y[idx] = 3.0
    out = y + 1
    print("RESULT:", *out.tolist())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
y = x * 2
y[idx] = 3.0
out = y + 1
torch.cuda.synchronize()
print("RESULT:", *out.tolist())
