# A graph runner class done right: static buffers on self, refreshed in place, a per-batch-size cache of
# graphs, outputs cloned before they leave.
import torch

torch.manual_seed(0)


class Runner:
    def __init__(self, model: torch.nn.Module, sizes: list[int]) -> None:
        self.model = model
        self.inputs = {bs: torch.zeros(bs, 32, device="cuda") for bs in sizes}
        self.outputs: dict[int, torch.Tensor] = {}
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        for bs in sizes:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s), torch.no_grad():
                for _ in range(3):
                    model(self.inputs[bs])
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.graph(g):
                self.outputs[bs] = model(self.inputs[bs])
            self.graphs[bs] = g

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        bs = x.shape[0]
        self.inputs[bs].copy_(x)
        self.graphs[bs].replay()
        return self.outputs[bs].clone()


runner = Runner(torch.nn.Linear(32, 32).cuda(), [1, 2, 4])
total = 0.0
for i in range(9):
    total += runner(torch.randn([1, 2, 4][i % 3], 32, device="cuda")).sum().item()
print("RESULT:", total)
