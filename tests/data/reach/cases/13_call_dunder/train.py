import torch
from scalers import LossScaler
from torch import nn

model = nn.Linear(16, 1).cuda()
scaler = LossScaler()
static_x = torch.randn(4, 16, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        scaler(model(static_x).sum()).backward()
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    scaled = scaler(model(static_x).sum())
    scaled.backward()
g.replay()
