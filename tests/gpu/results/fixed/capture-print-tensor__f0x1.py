# capture-print-tensor: print(tensor) inside capture (repr needs the values on the host).
import os

import torch

torch.manual_seed(0)
x = torch.randn(16, device="cuda")
new = torch.randn(16, device="cuda")

if os.environ.get("DENPEX_EAGER") == "1":
    y = new * 2
    out = y + 1
    print("RESULT:", *out.tolist())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
y = x * 2
print(y)
out = y + 1
torch.cuda.synchronize()
print("RESULT:", *out.tolist())
