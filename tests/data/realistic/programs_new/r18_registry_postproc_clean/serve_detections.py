#!/usr/bin/env python3
"""Batch detection service: replays a stream of camera frames through the detector.

The first --graph-after batches run eagerly while the service warms up; after
that the detector (backbone, heads and the configured post-processor) is served
from one captured CUDA graph.
"""
import argparse
import logging
import statistics
import time

import torch

from detector import Detector
from graph_server import CudaGraphServer
from postprocess import POSTPROCESSORS
from progress import progress

log = logging.getLogger("detserve")


def camera_frames(n, batch, size, num_classes, seed, max_objects=4):
    g = torch.Generator().manual_seed(seed)
    palette = torch.cat([torch.rand(num_classes, 3, generator=g), torch.zeros(1, 3)])
    coords = torch.arange(size)
    for i in range(n):
        noise = 0.2 * torch.rand(batch, 1, size, size, generator=g)
        x0, y0 = torch.randint(0, size - 24, (2, batch, max_objects, 1), generator=g)
        w, h = torch.randint(12, 24, (2, batch, max_objects, 1), generator=g)
        cls = torch.randint(0, num_classes, (batch, max_objects), generator=g)
        cls = cls.masked_fill(torch.rand(batch, max_objects, generator=g) > 0.6, num_classes)
        label_map = torch.full((batch, size, size), num_classes)
        for k in range(max_objects):
            in_x = (coords >= x0[:, k]) & (coords < x0[:, k] + w[:, k])
            in_y = (coords >= y0[:, k]) & (coords < y0[:, k] + h[:, k])
            label_map = torch.where(in_y[:, :, None] & in_x[:, None, :], cls[:, k, None, None], label_map)
        frames = palette[label_map].permute(0, 3, 1, 2) + noise
        yield i, frames


def recalibrate_bn(model, frames):
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for x in frames:
            model(x)
    return model.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--postprocessor", default="topk", choices=sorted(POSTPROCESSORS))
    ap.add_argument("--score-thresh", type=float, default=0.1)
    ap.add_argument("--max-det", type=int, default=100)
    ap.add_argument("--num-classes", type=int, default=8)
    ap.add_argument("--image-size", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--num-batches", type=int, default=360)
    ap.add_argument("--graph-after", type=int, default=140)
    ap.add_argument("--calib-batches", type=int, default=8)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=21)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname).1s %(asctime)s %(name)s] %(message)s")

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = Detector(args.num_classes, image_size=args.image_size, postprocessor=args.postprocessor,
                     score_thresh=args.score_thresh, max_det=args.max_det).to(device)
    calib = [x.to(device) for _, x in camera_frames(args.calib_batches, args.batch_size, args.image_size,
                                                      args.num_classes, args.seed + 1000)]
    recalibrate_bn(model, calib)
    log.info("BatchNorm statistics recalibrated on %d frames", len(calib) * args.batch_size)
    log.info("detector: %.2fM params, post-processor %r (score >= %.2f, %d per image)",
             sum(p.numel() for p in model.parameters()) / 1e6, model.postprocessor_name, args.score_thresh,
             args.max_det)

    server = CudaGraphServer(model)
    lat = []
    n_dets = 0
    class_hist = torch.zeros(args.num_classes, dtype=torch.long)
    last = None
    with torch.inference_mode():
        for i, frames in progress(camera_frames(args.num_batches, args.batch_size, args.image_size, args.num_classes,
                                                args.seed), total=args.num_batches, desc="frames", unit="batch"):
            t0 = time.perf_counter()
            frames = frames.to(device, non_blocking=True)
            if i < args.graph_after:
                boxes, scores, labels, valid = model(frames)
            else:
                if not server.ready:
                    log.info("batch %d: capturing the detector into a CUDA graph", i)
                    server.capture(frames)
                boxes, scores, labels, valid = server.infer(frames)
            per_image = valid.sum(dim=1).float()
            n_dets += int(valid.sum())
            class_hist += torch.bincount(labels[valid].cpu(), minlength=args.num_classes)
            if i == args.num_batches - 1:
                last = (frames.clone(), boxes.clone(), scores.clone(), labels.clone())
            lat.append((time.perf_counter() - t0) * 1e3)
            if i % args.log_every == 0:
                log.info("batch %4d  dets/img %5.1f  top score %.3f  p50 %.2f ms", i, float(per_image.mean()),
                         float(scores[:, 0].mean()), statistics.median(lat[-50:]))

        ref = model(last[0])
    log.info("%d detections over %d frames; per class %s", n_dets, args.num_batches * args.batch_size,
             class_hist.tolist())
    diff = max((a.float() - b.float()).abs().max().item() for a, b in zip(ref[:2], last[1:3]))
    same_labels = bool(torch.equal(ref[2], last[3]))
    if diff <= 1e-4 and same_labels:
        log.info("MATCH graph vs eager detections on the last batch (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager detections on the last batch (max |diff| %.3e, same labels %s)", diff,
                  same_labels)


if __name__ == "__main__":
    main()
