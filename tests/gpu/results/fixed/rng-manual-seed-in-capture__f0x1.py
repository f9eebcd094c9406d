# rng-manual-seed-in-capture: torch.manual_seed(0) inside capture while the CUDA generator holds another seed.
# RESULT: all draws in [0, 1) (1/0), the mean of the noise (1 decimal).
import os

import torch

x = torch.randn(4096, device="cuda")


def eager_reference():
    torch.manual_seed(0)
    r = torch.rand(4096, device="cuda")
    out = x + r
    noise = out - x
    print("RESULT:", int(bool(((noise >= 0) & (noise < 1)).all())), round(noise.mean().item(), 1))


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
torch.manual_seed(0)
r = torch.rand(4096, device="cuda")
out = x + r
torch.cuda.synchronize()
noise = out - x
print("RESULT:", int(bool(((noise >= 0) & (noise < 1)).all())), round(noise.mean().item(), 1))
