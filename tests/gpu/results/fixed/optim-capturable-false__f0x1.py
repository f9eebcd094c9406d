# optim-capturable-false: torch.optim.Adam(capturable=False) stepped inside capture (after a proper warm-up).
import os

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(256, 256).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
data = [torch.randn(64, 256, device="cuda") for _ in range(8)]
static_x = torch.empty_like(data[0])


def eager_step(m, o, xx):
    o.zero_grad(set_to_none=True)
    m(xx).pow(2).mean().backward()
    o.step()


def summary():
    w, b = model.weight.detach(), model.bias.detach()
    return w.sum().item(), w.abs().sum().item(), b.sum().item()


if os.environ.get("DENPEX_EAGER") == "1":
    for i in range(8):
        eager_step(model, opt, data[i])
    print("RESULT:", *summary())
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for i in range(3):
        static_x.copy_(data[i])
        eager_step(model, opt, static_x)
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)

for i in range(3, 8):
    static_x.copy_(data[i])
    opt.zero_grad(set_to_none=True)
    static_loss = model(static_x).pow(2).mean()
    static_loss.backward()
    opt.step()
torch.cuda.synchronize()
print("RESULT:", *summary())
