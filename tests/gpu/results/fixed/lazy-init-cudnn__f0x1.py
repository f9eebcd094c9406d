# lazy-init-cudnn: cudnn.benchmark=True and the first conv of the process happens inside capture.
import os

import torch

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.manual_seed(0)
conv = torch.nn.Conv2d(64, 64, 3, padding=1).cuda()
x = torch.randn(8, 64, 56, 56, device="cuda")
new = torch.randn(8, 64, 56, 56, device="cuda")


def eager_reference():  # a function, so that it is no warm-up of the capture below
    with torch.no_grad():
        y = torch.nn.functional.conv2d(new, conv.weight, conv.bias, padding=1)
    print("RESULT:", y.sum().item(), y.abs().sum().item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
x.copy_(new)
y = conv(x)
torch.cuda.synchronize()
print("RESULT:", y.sum().item(), y.abs().sum().item())
