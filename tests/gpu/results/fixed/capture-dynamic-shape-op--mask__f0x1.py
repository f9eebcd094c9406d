# capture-dynamic-shape-op (variant): boolean-mask indexing x[mask] inside capture.
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")

if os.environ.get("DENPEX_EAGER") == "1":
    out = new[new > 0].sum()
    print("RESULT:", out.item())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
out = x[x > 0].sum()
torch.cuda.synchronize()
print("RESULT:", out.item())
