# mgc-autocast-cache: torch.cuda.make_graphed_callables called under torch.autocast with the default
# cache_enabled=True.
import os

import torch
import torch.nn as nn

torch.manual_seed(0)
m = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 64)).cuda()
x = torch.randn(8, 64, device="cuda", requires_grad=True)
inp = torch.randn(8, 64, device="cuda")


def eager_reference():
    xr = inp.clone().requires_grad_(True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        oref = m(xr)
    oref.float().sum().backward()
    print("RESULT:", oref.float().sum().item(), xr.grad.sum().item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

with torch.autocast("cuda", dtype=torch.bfloat16):
    gm = torch.cuda.make_graphed_callables(m, (x,))

xi = inp.clone().requires_grad_(True)
with torch.autocast("cuda", dtype=torch.bfloat16):
    out = gm(xi)
out.float().sum().backward()
torch.cuda.synchronize()
print("RESULT:", out.float().sum().item(), xi.grad.sum().item())
