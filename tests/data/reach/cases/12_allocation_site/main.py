import torch
from model import TwoPath

model = TwoPath(64).cuda()
static_x = torch.randn(8, 64, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        model.fast_path(static_x)
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = model.fast_path(static_x)
g.replay()

debug = model.slow_path(static_x)
