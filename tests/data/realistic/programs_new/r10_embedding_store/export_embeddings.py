#!/usr/bin/env python3
"""Export document embeddings for the retrieval index.

Documents are encoded in fixed-shape batches through a CUDA-graphed encoder and
collected in an EmbeddingStore.  A sample of documents is re-encoded eagerly at
the end to check the export.
"""
import argparse
import logging
import time

import torch

from encoder import PooledEncoder, ReplayEncoder
from progress import progress
from store import EmbeddingStore

log = logging.getLogger("export")


def documents(n_docs, batch, seq, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    for start in range(0, n_docs, batch):
        lengths = torch.randint(4, seq + 1, (batch,), generator=g)
        toks = torch.randint(1, vocab, (batch, seq), generator=g)
        toks[torch.arange(seq)[None, :] >= lengths[:, None]] = 0
        yield torch.arange(start, start + batch), toks


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--docs", type=int, default=25600)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--log-every", type=int, default=1)
    ap.add_argument("--seed", type=int, default=17)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-8s %(name)s %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    enc = PooledEncoder(args.vocab).to(dev).eval()
    store = EmbeddingStore(64)
    n_batches = args.docs // args.batch_size
    log.info("exporting %d documents in %d batches", args.docs, n_batches)
    with torch.no_grad():
        runner = ReplayEncoder(enc, args.batch_size, args.seq_len, dev).build()
        log.info("encoder graph captured")
        t0 = time.perf_counter()
        for i, (ids, toks) in enumerate(progress(documents(args.docs, args.batch_size, args.seq_len, args.vocab,
                                                           args.seed), total=n_batches, desc="export", unit="batch")):
            vecs = runner.encode(toks.to(dev, non_blocking=True))
            store.add(ids.to(dev), vecs)
            if i % args.log_every == 0:
                log.info("batch %4d  %6d docs  %.0f docs/s  mean norm %.4f", i, len(store),
                         len(store) / (time.perf_counter() - t0), vecs.norm(dim=-1).mean().item())
        ids, table = store.finalize()
        log.info("index table %s", tuple(table.shape))

        sample = list(documents(args.docs, args.batch_size, args.seq_len, args.vocab, args.seed))[:4]
        ref = torch.cat([enc(t.to(dev)) for _, t in sample])
        got = table[: ref.shape[0]]
    diff = (ref - got).abs().max().item()
    if diff <= 1e-4:
        log.info("MATCH exported embeddings vs eager (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH exported embeddings vs eager (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
