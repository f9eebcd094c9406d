"""Offline generation with the TinyMix plugin model."""

import argparse
import logging

from tiny_vllm_plugin import register
from vllm import LLM, SamplingParams

logger = logging.getLogger("tinymix.serve")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="./checkpoints/tinymix-350m")
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()

    register()
    llm = LLM(model=args.model, enforce_eager=args.enforce_eager, attention_backend="CUSTOM")
    params = SamplingParams(temperature=0.8, max_tokens=args.max_tokens)
    for out in llm.generate(["The capital of France is", "CUDA graphs replay"], params):
        logger.info("%r -> %r", out.prompt, out.outputs[0].text)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
