import torch
from model import Tower


def graphed_step(model: Tower, static_x: torch.Tensor) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(static_x).sum().backward()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_loss = model(static_x).sum()
        static_loss.backward()
    return g, static_loss


if __name__ == "__main__":
    net = Tower(64, depth=4).cuda()
    x = torch.randn(32, 64, device="cuda")
    graph, loss = graphed_step(net, x)
    graph.replay()
    print(f"loss {loss.item():.4f}")  # ok: capture-item-sync
