import torch
from model import AutoEncoder

model = AutoEncoder(128).cuda().eval()
static_x = torch.zeros(4, 128, device="cuda")

stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream), torch.no_grad():
    for _ in range(3):
        model(static_x)
torch.cuda.current_stream().wait_stream(stream)

g = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(g):
    static_y = model(static_x)

for batch in [torch.randn(4, 128, device="cuda") for _ in range(5)]:
    static_x.copy_(batch)
    g.replay()
    print("loss", static_y.pow(2).mean().item())  # ok: capture-item-sync
