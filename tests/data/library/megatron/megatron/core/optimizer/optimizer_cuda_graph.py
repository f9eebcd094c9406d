import torch


class OptimizerCudaGraphWrapper:
    def __init__(self, optimizer_step_func):
        self.optimizer_step_func = optimizer_step_func
        self.graph = None

    def __call__(self):
        if self.graph is None:
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.result = self.optimizer_step_func()
        self.graph.replay()
        return self.result
