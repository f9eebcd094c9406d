# replay-output-kept-without-clone, clean twin: the caller clones each result it keeps.
import os

import torch

torch.manual_seed(0)


class Runner:
    def __init__(self, model, example):
        self.model = model
        self.static_in = example.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(self.static_in)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = model(self.static_in)

    def run(self, x):
        self.static_in.copy_(x)
        self.graph.replay()
        return self.static_out


model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).cuda()
xs = [torch.randn(8, 32, device="cuda") for _ in range(5)]
with torch.no_grad():
    if os.environ.get("DENPEX_EAGER") == "1":
        kept = [model(x) for x in xs]
    else:
        runner = Runner(model, xs[0])
        kept = []
        for x in xs:
            y = runner.run(x)
            kept.append(y.clone())
    sums = [k.sum().item() for k in kept]
print("RESULT:", *sums)
