# optim-capturable-float-lr: Adam(capturable=True) with a Python-float lr, changed by a LambdaLR scheduler
# between replays. Silent: the lr is baked into the captured step.
import os

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import LambdaLR

torch.manual_seed(0)
model = nn.Linear(256, 256).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-2, capturable=True)
data = [torch.randn(64, 256, device="cuda") for _ in range(10)]
static_x = torch.empty_like(data[0])


def eager_step(m, o, xx):
    o.zero_grad(set_to_none=True)
    m(xx).pow(2).mean().backward()
    o.step()


def summary():
    w, b = model.weight.detach(), model.bias.detach()
    return w.sum().item(), w.abs().sum().item(), b.sum().item()


def eager_reference():
    ref_opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for i in range(3):
        eager_step(model, ref_opt, data[i])
    ref_sched = LambdaLR(ref_opt, lambda e: 0.3**e)
    for i in range(3, 10):
        eager_step(model, ref_opt, data[i])
        ref_sched.step()
    print("RESULT:", *summary())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for i in range(3):
        static_x.copy_(data[i])
        eager_step(model, opt, static_x)
torch.cuda.current_stream().wait_stream(s)

sched = LambdaLR(opt, lambda e: 0.3**e)
g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)

for i in range(3, 10):
    static_x.copy_(data[i])
    opt.zero_grad(set_to_none=True)
    static_loss = model(static_x).pow(2).mean()
    static_loss.backward()
    opt.step()
    sched.step()
torch.cuda.synchronize()
print("RESULT:", *summary())
