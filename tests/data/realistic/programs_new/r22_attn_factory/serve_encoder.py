#!/usr/bin/env python3
"""Offline batch classification of padded token sequences with a small encoder.

The attention implementation is picked by name (--attn).  The first
--graph-after batches run eagerly; then the encoder is captured once for the
fixed batch shape and every later batch is a graph replay.  The last batch is
recomputed eagerly at the end and compared with the replayed output.
"""
import argparse
import collections
import logging
import statistics
import time

import torch

from attention import Attention
from encoder import Encoder, EncoderConfig
from progress import progress

log = logging.getLogger("encoder.serve")


class GraphRunner:
    def __init__(self, encoder, tokens, pad, warmup=3):
        self.encoder = encoder
        self.warmup = warmup
        self.static_x = tokens.clone()
        self.static_pad = pad.clone()
        self.static_out = None
        self.pool = torch.cuda.graph_pool_handle()
        self.graph = torch.cuda.CUDAGraph()

    def _warmup(self):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(self.warmup):
                self.encoder(self.static_x, self.static_pad)
        torch.cuda.current_stream().wait_stream(s)

    def capture(self):
        self._warmup()
        with torch.cuda.graph(self.graph, pool=self.pool):
            self.static_out = self.encoder(self.static_x, self.static_pad)
        return self

    def __call__(self, tokens, pad):
        self.static_x.copy_(tokens)
        self.static_pad.copy_(pad)
        self.graph.replay()
        return self.static_out


def padded_batches(n, batch, max_len, min_len, vocab, seed, topics=16):
    g = torch.Generator().manual_seed(seed)
    positions = torch.arange(max_len)
    span = (vocab - 1) // topics
    for i in range(n):
        lengths = torch.randint(min_len, max_len + 1, (batch,), generator=g)
        pad = positions[None, :] < lengths[:, None]
        topic = torch.randint(0, topics, (batch, 1), generator=g)
        common = torch.rand(batch, max_len, generator=g) < 0.3
        tokens = 1 + torch.where(common, torch.randint(0, vocab - 1, (batch, max_len), generator=g),
                                 topic * span + torch.randint(0, span, (batch, max_len), generator=g))
        yield i, tokens.masked_fill(~pad, 0), pad


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--attn", default="local", choices=Attention.available())
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--num-batches", type=int, default=480)
    ap.add_argument("--graph-after", type=int, default=240)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=22)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, datefmt="%m%d %H:%M:%S",
                        format="%(levelname).1s%(asctime)s.%(msecs)03d %(process)d %(name)s] %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    cfg = EncoderConfig(vocab=args.vocab, max_len=args.seq_len, dim=args.dim, heads=args.heads, layers=args.layers,
                        ffn=4 * args.dim, window=args.window, impl=args.attn)
    encoder = Encoder(cfg).to(dev).eval()
    log.info("encoder: %d layers, %s attention (window %d), %.2fM parameters", cfg.layers, cfg.impl, cfg.window,
             sum(p.numel() for p in encoder.parameters()) / 1e6)
    log.info("batch shape %dx%d, %d batches, graph after %d", args.batch_size, args.seq_len, args.num_batches,
             args.graph_after)

    runner = None
    lat = []
    counts = collections.Counter()
    last = None
    min_len = args.seq_len - args.window
    with torch.inference_mode():
        stream = padded_batches(args.num_batches, args.batch_size, args.seq_len, min_len, args.vocab, args.seed)
        for i, tokens, pad in progress(stream, total=args.num_batches, desc="classify", unit="batch"):
            t0 = time.perf_counter()
            tokens = tokens.to(dev, non_blocking=True)
            pad = pad.to(dev, non_blocking=True)
            if i < args.graph_after:
                logp = encoder(tokens, pad)
            else:
                if runner is None:
                    log.info("batch %d: capturing encoder graph for %dx%d", i, args.batch_size, args.seq_len)
                    runner = GraphRunner(encoder, tokens, pad).capture()
                    log.info("graph captured")
                logp = runner(tokens, pad)
            conf, label = logp.max(dim=-1)
            counts.update(label.tolist())
            if i == args.num_batches - 1:
                last = (tokens.clone(), pad.clone(), logp.clone())
            lat.append((time.perf_counter() - t0) * 1e3)
            if i % args.log_every == 0:
                log.info("batch %4d  tokens %5d  mean conf %.4f  p50 %.2f ms", i, int(pad.sum()),
                         conf.exp().mean().item(), statistics.median(lat[-50:]))

        ref = encoder(last[0], last[1])
    log.info("label histogram: %s", [counts[c] for c in range(cfg.num_classes)])
    diff = (ref - last[2]).abs().max().item()
    if diff <= 1e-3:
        log.info("MATCH graph vs eager log-probs on the last batch (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager log-probs on the last batch (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
