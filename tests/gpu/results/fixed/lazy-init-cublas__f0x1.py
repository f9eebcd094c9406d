# lazy-init-cublas: the first cuBLAS call of the process happens inside capture (no warm-up).
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(1024, 1024).cuda()
x = torch.randn(64, 1024, device="cuda")
new = torch.randn(64, 1024, device="cuda")


def eager_reference():  # a function, so that it is no warm-up of the capture below
    with torch.no_grad():
        y = torch.nn.functional.linear(new, lin.weight, lin.bias)
    print("RESULT:", y.sum().item(), y.abs().sum().item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
y = lin(x)
torch.cuda.synchronize()
print("RESULT:", y.sum().item(), y.abs().sum().item())
