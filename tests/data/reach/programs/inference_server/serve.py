import argparse
import logging

import torch
from minserve.attention import AttentionMetadata
from minserve.config import EngineConfig
from minserve.engine import LLMEngine


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--enforce-eager", action="store_true")
    ap.add_argument("--requests", type=int, default=16)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    engine = LLMEngine(EngineConfig(enforce_eager=args.enforce_eager))
    ids = torch.randint(0, 32000, (args.requests,), device="cuda")
    meta = AttentionMetadata(torch.randint(1, 64, (args.requests,), dtype=torch.int32, device="cuda"),
                             torch.zeros(args.requests, 8, dtype=torch.long, device="cuda"),
                             torch.arange(args.requests, device="cuda"))
    for step in range(32):
        out = engine.decode(ids, meta)
        ids = torch.tensor(out, device="cuda")
        logging.info("step %d: %s", step, out[:4])


if __name__ == "__main__":
    main()
