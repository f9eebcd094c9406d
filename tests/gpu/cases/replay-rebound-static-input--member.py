# replay-rebound-static-input, held on the instance: a runner class captures self.static_x and keeps the graph
# on self; run() rebinds self.static_x = x and replays. Silent: the graph keeps reading the old storage.
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(256, 256).cuda()
batches = [torch.randn(8, 256, device="cuda") for _ in range(3)]


class Runner:
    def __init__(self, model):
        self.model = model
        self.static_x = torch.randn(8, 256, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.model(self.static_x)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_y = self.model(self.static_x)

    def run(self, x):
        self.static_x = x  # BUG: graph still reads the old storage
        self.graph.replay()
        return self.static_y.sum().item()


if os.environ.get("DENPEX_EAGER") == "1":
    with torch.no_grad():
        print("RESULT:", *[lin(b).sum().item() for b in batches])
    raise SystemExit(0)

runner = Runner(lin)
print("RESULT:", *[runner.run(b) for b in batches])
