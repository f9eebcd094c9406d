import torch
from engine import capture_module
from net import Net

x = torch.randn(8, 32, device="cuda")
graph, out = capture_module(Net(32).cuda(), x)
graph.replay()
