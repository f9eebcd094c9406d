#!/usr/bin/env python3
"""Streaming anomaly scoring of sensor windows.

Calibrates the error statistics on a clean stream, scores the first
--graph-after batches eagerly, then captures the scoring step once and replays it.
"""
import argparse
import logging
import time

import torch

from capture import graph_capture, side_stream_warmup
from progress import progress
from scoring import WindowAutoencoder, window_scores

logger = logging.getLogger("anomaly")


def sensor_stream(n, batch, channels, window, seed, anomaly_rate=0.02):
    g = torch.Generator().manual_seed(seed)
    t = torch.linspace(0, 6.28, window)
    for i in range(n):
        phase = torch.rand(batch, channels, 1, generator=g) * 6.28
        x = torch.sin(t + phase) + 0.1 * torch.randn(batch, channels, window, generator=g)
        bad = torch.rand(batch, generator=g) < anomaly_rate
        x[bad] += 2.0 * torch.randn(int(bad.sum()), channels, window, generator=g)
        yield i, x


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--channels", type=int, default=8)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--num-batches", type=int, default=400)
    ap.add_argument("--graph-after", type=int, default=160)
    ap.add_argument("--z-thresh", type=float, default=3.0)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = WindowAutoencoder(args.channels, args.window).to(dev).eval()

    with torch.no_grad():
        calib = torch.cat([x for _, x in sensor_stream(8, args.batch_size, args.channels, args.window, 99, 0.0)])
        calib = calib.to(dev)
        err = (model(calib) - calib).pow(2).mean(dim=(1, 2))
        mean, std = err.mean(), err.std()
    logger.info("calibrated on %d windows: err mean %.5f std %.5f", calib.shape[0], mean.item(), std.item())

    graph = None
    static_x = None
    static_out = None
    alarms = 0
    last = None
    t0 = time.perf_counter()
    with torch.no_grad():
        for i, x in progress(sensor_stream(args.num_batches, args.batch_size, args.channels, args.window, args.seed),
                             total=args.num_batches, desc="windows", unit="batch"):
            x = x.to(dev, non_blocking=True)
            if i < args.graph_after:
                z, alarm, peak = window_scores(model, x, mean, std, args.z_thresh)
            else:
                if graph is None:
                    logger.info("batch %d: capturing scoring graph", i)
                    static_x = x.clone()
                    side_stream_warmup(window_scores, model, static_x, mean, std, args.z_thresh)
                    graph = torch.cuda.CUDAGraph()
                    with graph_capture(graph):
                        static_out = window_scores(model, static_x, mean, std, args.z_thresh)
                    logger.info("graph captured")
                static_x.copy_(x)
                graph.replay()
                z, alarm, peak = static_out
            n_alarm = int(alarm.sum())
            alarms += n_alarm
            last = (x.clone(), z.clone())
            if i % args.log_every == 0:
                logger.info("batch %4d  alarms %3d  mean z %+.3f  %.0f win/s", i, n_alarm, z.mean().item(),
                            (i + 1) * args.batch_size / (time.perf_counter() - t0))
        ref_z, _, _ = window_scores(model, last[0], mean, std, args.z_thresh)
    logger.info("total alarms: %d", alarms)
    diff = (ref_z - last[1]).abs().max().item()
    if diff <= 1e-4:
        logger.info("MATCH graph vs eager z-scores on the last batch (max |diff| %.3e)", diff)
    else:
        logger.error("MISMATCH graph vs eager z-scores on the last batch (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
