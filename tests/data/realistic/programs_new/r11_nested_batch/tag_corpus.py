#!/usr/bin/env python3
"""Tag a corpus of multi-segment sequences with a CUDA-graphed tagger.

Each batch carries token ids plus an `extras` dict (attention mask, segment ids).
After the run a few batches are tagged again eagerly and compared.
"""
import argparse
import logging
import time

import torch

from graphed_module import GraphedForward
from progress import progress
from tagger import SegmentTagger

log = logging.getLogger("tagger")


def corpus(n, batch, seq, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        lengths = torch.randint(seq // 4, seq + 1, (batch,), generator=g)
        pos = torch.arange(seq)[None, :]
        mask = pos < lengths[:, None]
        split = (lengths * torch.rand(batch, generator=g)).long()[:, None]
        segs = (pos >= split).long() + 2 * (~mask).long()
        toks = torch.randint(1, vocab, (batch, seq), generator=g) * mask
        out.append((toks, {"attention_mask": mask, "segment_ids": segs}))
    return out


def to_device(batch, dev):
    toks, extras = batch
    return toks.to(dev), {k: v.to(dev) for k, v in extras.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=96)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s :: %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = SegmentTagger(args.vocab).to(dev).eval()
    fast = GraphedForward(model)
    data = corpus(args.batches, args.batch_size, args.seq_len, args.vocab, args.seed)
    log.info("%d batches of %dx%d", len(data), args.batch_size, args.seq_len)

    kept = []
    tag_hist = torch.zeros(9, device=dev)
    t0 = time.perf_counter()
    with torch.no_grad():
        for i, batch in enumerate(progress(data, desc="tagging", unit="batch")):
            toks, extras = to_device(batch, dev)
            logp = fast(toks, extras)
            tags = logp.argmax(-1)
            tag_hist += torch.bincount(tags[extras["attention_mask"]], minlength=9)
            if i >= len(data) - 3:
                kept.append(logp.clone())
            if i % args.log_every == 0:
                log.info("batch %4d  mean max-logp %.4f  %.0f seq/s", i, logp.max(-1).values.mean().item(),
                         (i + 1) * args.batch_size / (time.perf_counter() - t0))
        ref = [model(*to_device(b, dev)) for b in data[-3:]]
    log.info("tag histogram %s", [int(v) for v in tag_hist.tolist()])
    diff = max((r - k).abs().max().item() for r, k in zip(ref, kept))
    if diff <= 1e-3:
        log.info("MATCH graph vs eager log-probs on the last batches (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager log-probs on the last batches (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
