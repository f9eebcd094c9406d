# replay-rebound-static-input, per-shape dictionaries (the vLLM / SGLang runner shape): one graph per batch size
# in self.graphs[bs], static inputs in self.inputs[bs]; run() rebinds self.inputs[bs] = x and replays.
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(256, 256).cuda()
batches = [torch.randn(bs, 256, device="cuda") for bs in (2, 4, 2)]


class Runner:
    def __init__(self, model):
        self.graphs = {}
        self.inputs = {}
        self.outputs = {}
        s = torch.cuda.Stream()
        for bs in (4, 2):
            self.inputs[bs] = torch.randn(bs, 256, device="cuda")
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(self.inputs[bs])
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.outputs[bs] = model(self.inputs[bs])
            self.graphs[bs] = g

    def run(self, x):
        bs = x.shape[0]
        self.inputs[bs].copy_(x)  # BUG: graph still reads the old storage
        self.graphs[bs].replay()
        return self.outputs[bs].sum().item()


if os.environ.get("DENPEX_EAGER") == "1":
    with torch.no_grad():
        print("RESULT:", *[lin(b).sum().item() for b in batches])
    raise SystemExit(0)

runner = Runner(lin)
print("RESULT:", *[runner.run(b) for b in batches])
