#!/usr/bin/env python3
"""Batch scoring service for the MoE encoder.

Batches are scored eagerly for --graph-after batches (to log eager latency), then
the encoder is captured once into a CUDA graph for the fixed batch shape and
replayed for the rest of the stream.
"""
import argparse
import logging
import statistics
import time

import torch

from moe import MoEEncoder
from progress import progress

logger = logging.getLogger("moe.serve")


class GraphRunner:
    def __init__(self, model, example, warmup=3):
        self.model = model
        self.warmup = warmup
        self.static_in = example.clone()
        self.static_out = None
        self.graph = None

    def capture(self):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(self.warmup):
                self.model(self.static_in)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = self.model(self.static_in)
        return self

    def __call__(self, tokens):
        self.static_in.copy_(tokens)
        self.graph.replay()
        return self.static_out


def request_batches(n, batch, seq, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    for i in range(n):
        yield i, torch.randint(0, vocab, (batch, seq), generator=g)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="cuda")
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--num-batches", type=int, default=300)
    p.add_argument("--graph-after", type=int, default=120)
    p.add_argument("--log-every", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = MoEEncoder(args.vocab).to(device).eval()
    n_params = sum(p.numel() for p in model.parameters())
    logger.info("MoE encoder ready: %.2fM parameters, batch %dx%d", n_params / 1e6, args.batch_size, args.seq_len)

    runner = None
    lat = []
    nll_total = 0.0
    check_batch = None
    graph_nll = None
    with torch.inference_mode():
        bar = progress(request_batches(args.num_batches, args.batch_size, args.seq_len, args.vocab, args.seed),
                       total=args.num_batches, desc="scoring", unit="batch")
        for i, tokens in bar:
            t0 = time.perf_counter()
            tokens = tokens.to(device, non_blocking=True)
            if i < args.graph_after:
                logp = model(tokens)
            else:
                if runner is None:
                    logger.info("batch %d: capturing CUDA graph for %dx%d", i, args.batch_size, args.seq_len)
                    runner = GraphRunner(model, tokens).capture()
                    logger.info("graph captured")
                logp = runner(tokens)
            nll = -logp.gather(-1, tokens[..., None]).mean()
            nll_total += float(nll)
            if i == args.num_batches - 1:
                check_batch = tokens.clone()
                graph_nll = logp.clone()
            lat.append((time.perf_counter() - t0) * 1e3)
            if i % args.log_every == 0:
                logger.info("batch %4d  nll %.4f  p50 %.2f ms", i, float(nll), statistics.median(lat[-50:]))

        ref = model(check_batch)
    diff = (ref - graph_nll).abs().max().item()
    logger.info("mean nll %.4f over %d batches", nll_total / args.num_batches, args.num_batches)
    if diff <= 1e-3:
        logger.info("MATCH graph vs eager on the last batch (max |diff| %.3e)", diff)
    else:
        logger.error("MISMATCH graph vs eager on the last batch (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
