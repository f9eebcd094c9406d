# capture-implicit-bool: `if tensor.sum() > 0:` inside capture (implicit bool() -> host sync).
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda") + 0.5  # positive sum: the other branch than x's


def step():
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


if os.environ.get("DENPEX_EAGER") == "1":
    x.copy_(new)
    out = step()
    print("RESULT:", out.sum().item(), out[0].item())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
out = step()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), out[0].item())
