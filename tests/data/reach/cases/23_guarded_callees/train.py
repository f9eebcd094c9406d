import logging

import torch
from model import Net

logging.basicConfig(level=logging.INFO)
net = Net(32).cuda()
static_x = torch.randn(8, 32, device="cuda")

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        net(static_x)
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = net(static_x)

done = torch.zeros((), dtype=torch.bool, device="cuda")
while not done.item():  # ok: capture-item-sync
    g.replay()
    done.fill_(True)
