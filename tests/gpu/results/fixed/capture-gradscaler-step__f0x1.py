# capture-gradscaler-step: torch.amp.GradScaler scaler.step(opt) and scaler.update() inside the captured fp16
# training step.
import os

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
loss_fn = nn.CrossEntropyLoss()
static_x = torch.randn(32, 256, device="cuda")
static_y = torch.randint(0, 10, (32,), device="cuda")


def fwd_bwd():
    with torch.autocast("cuda", dtype=torch.float16):
        loss = loss_fn(model(static_x), static_y)
    scaler.scale(loss).backward()
    return loss


def summary():
    w = model[0].weight.detach()
    return w.sum().item(), w.abs().sum().item(), model[2].bias.detach().sum().item()


def eager_reference():
    for _ in range(4):
        opt.zero_grad(set_to_none=True)
        fwd_bwd()
        scaler.step(opt)
        scaler.update()
    print("RESULT:", *summary())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        fwd_bwd()
        scaler.step(opt)
        scaler.update()
torch.cuda.current_stream().wait_stream(s)

opt.zero_grad(set_to_none=True)
g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
static_loss = fwd_bwd()
scaler.step(opt)
scaler.update()
torch.cuda.synchronize()
print("RESULT:", *summary())
