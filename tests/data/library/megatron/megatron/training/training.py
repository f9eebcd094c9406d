from megatron.core.optimizer.optimizer_cuda_graph import OptimizerCudaGraphWrapper


def setup(optimizer, args):
    if args.optimizer_cuda_graph:
        optimizer.step = OptimizerCudaGraphWrapper(optimizer.step)
    return optimizer
