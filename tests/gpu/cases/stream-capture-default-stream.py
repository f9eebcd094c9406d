# stream-capture-default-stream: manual g.capture_begin()/capture_end() on the default (legacy) stream.
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")


def eager_reference():
    out = new * 2
    print("RESULT:", out.sum().item(), out[0].item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
g.capture_begin()
out = x * 2
g.capture_end()
x.copy_(new)
g.replay()
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), out[0].item())
