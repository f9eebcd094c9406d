"""Detection post-processing, selected by name from the serving config.

Each post-processor takes decoded boxes [B, N, 4], class scores [B, N, C] and a
localization-quality score [B, N, 1] and returns fixed-size detections:
boxes [B, K, 4], scores [B, K], labels [B, K] and a validity mask [B, K].
"""
import torch

POSTPROCESSORS = {}


def register_postprocessor(name):
    def decorator(fn):
        if name in POSTPROCESSORS:
            raise KeyError(f"post-processor {name!r} is already registered")
        POSTPROCESSORS[name] = fn
        return fn
    return decorator


def get_postprocessor(name):
    try:
        return POSTPROCESSORS[name]
    except KeyError:
        raise KeyError(f"unknown post-processor {name!r}; registered: {sorted(POSTPROCESSORS)}") from None


def _gather_boxes(boxes, loc):
    return torch.gather(boxes, 1, loc[..., None].expand(-1, -1, boxes.shape[-1]))


@register_postprocessor("topk")
def topk_decode(boxes, scores, quality, score_thresh=0.05, max_det=100):
    num_classes = scores.shape[-1]
    keep = (scores * quality) > score_thresh
    cand = torch.full_like(scores, float("-inf"))
    cand = torch.where(keep, scores * quality, cand)
    top_scores, flat_idx = cand.flatten(1).topk(max_det, dim=1)
    valid = torch.isfinite(top_scores)
    loc = torch.div(flat_idx, num_classes, rounding_mode="floor")
    det_boxes = torch.where(valid[..., None], _gather_boxes(boxes, loc), 0.0)
    return det_boxes, torch.where(valid, top_scores, 0.0), torch.where(valid, flat_idx % num_classes, -1), valid


@register_postprocessor("agnostic")
def class_agnostic_decode(boxes, scores, quality, score_thresh=0.05, max_det=100):
    best, labels = (scores * quality).max(dim=-1)
    best = best.masked_fill(best <= score_thresh, float("-inf"))
    top_scores, loc = best.topk(max_det, dim=1)
    valid = torch.isfinite(top_scores)
    det_boxes = torch.where(valid[..., None], _gather_boxes(boxes, loc), 0.0)
    return det_boxes, torch.where(valid, top_scores, 0.0), torch.where(valid, torch.gather(labels, 1, loc), -1), valid
