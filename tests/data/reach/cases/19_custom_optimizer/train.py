import torch
from lion import ClippedLion
from torch import nn

model = nn.Linear(32, 32).cuda()
opt = ClippedLion(model.parameters(), lr=1e-4)
static_x = torch.randn(8, 32, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        model(static_x).sum().backward()
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    model(static_x).sum().backward()
    opt.step()  # ok: optim-capturable-false
g.replay()
