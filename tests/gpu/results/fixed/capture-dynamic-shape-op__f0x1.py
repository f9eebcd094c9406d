# capture-dynamic-shape-op: torch.nonzero (data-dependent output shape) inside capture.
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")

if os.environ.get("DENPEX_EAGER") == "1":
    idx = torch.nonzero(new > 0)
    out = idx.float().sum()
    print("RESULT:", out.item())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
idx = torch.nonzero(x > 0)
out = idx.float().sum()
torch.cuda.synchronize()
print("RESULT:", out.item())
