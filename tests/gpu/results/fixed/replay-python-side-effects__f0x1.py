# replay-python-side-effects: a Python counter incremented inside the capture runs once, at capture; the
# replays skip it. Silent: the step count disagrees with the number of steps run.
import os

import torch

torch.manual_seed(0)
x = torch.randn(16, device="cuda")
steps = 0


def eager_reference():
    n = 0
    for _ in range(3):
        out = x * 2
        n += 1
    print("RESULT:", n, out.sum().item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
for _ in range(3):
    out = x * 2
    steps += 1
torch.cuda.synchronize()
print("RESULT:", steps, out.sum().item())
