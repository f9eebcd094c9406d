import torch
from ops import mix, normalise, project, update_ema

w = torch.randn(64, 64, device="cuda")
ema = torch.zeros(32, 64, device="cuda")
static_x = torch.randn(32, 64, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = mix(project(normalise(static_x), w))
    update_ema(ema, y)
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = mix(project(normalise(static_x), w))
    update_ema(ema, static_y)
g.replay()
