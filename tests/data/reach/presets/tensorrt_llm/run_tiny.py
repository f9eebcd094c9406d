"""Generate with TinyLM on the PyTorch backend; decode batches run as CUDA graphs."""

import argparse
import logging

import tiny_trtllm  # noqa: F401  (registers TinyLMForCausalLM)
from tensorrt_llm import LLM, SamplingParams
from tensorrt_llm.llmapi import CudaGraphConfig

logger = logging.getLogger("tinylm.run")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="./checkpoints/tinylm-hf")
    parser.add_argument("--no-cuda-graph", action="store_true")
    parser.add_argument("--max-batch-size", type=int, default=16)
    args = parser.parse_args()

    graphs = (
        None
        if args.no_cuda_graph
        else CudaGraphConfig(batch_sizes=[1, 2, 4, 8, 16], enable_padding=True)
    )
    llm = LLM(model=args.model, max_batch_size=args.max_batch_size, cuda_graph_config=graphs)
    for out in llm.generate(["Hello, my name is"], SamplingParams(max_tokens=32)):
        logger.info("%s", out.outputs[0].text)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
