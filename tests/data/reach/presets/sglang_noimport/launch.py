"""Start an offline SGLang engine on the TinyRoute checkpoint."""

import argparse
import logging
import os

import tinyserve.engine as sgl

logger = logging.getLogger("tinyroute.launch")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path", default="./checkpoints/tinyroute-1b")
    parser.add_argument("--disable-cuda-graph", action="store_true")
    parser.add_argument("--cuda-graph-max-bs", type=int, default=32)
    args = parser.parse_args()

    os.environ.setdefault("SGLANG_EXTERNAL_MODEL_PACKAGE", "tiny_sgl_model")
    engine = sgl.Engine(
        model_path=args.model_path,
        disable_cuda_graph=args.disable_cuda_graph,
        cuda_graph_max_bs=args.cuda_graph_max_bs,
    )
    out = engine.generate(
        "Mixture of experts models route", {"temperature": 0.7, "max_new_tokens": 32}
    )
    logger.info("%s", out["text"])
    engine.shutdown()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
