"""Single-scale anchor-free detector (FCOS-style heads on a stride-8 feature map)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from postprocess import get_postprocessor


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Detector(nn.Module):
    stride = 8

    def __init__(self, num_classes=8, width=64, image_size=128, postprocessor="topk", score_thresh=0.1,
                 max_det=100, prior_prob=0.1):
        super().__init__()
        self.backbone = nn.Sequential(conv_bn(3, width // 2, 2), conv_bn(width // 2, width, 2), conv_bn(width, width),
                                      conv_bn(width, 2 * width, 2), conv_bn(2 * width, 2 * width))
        self.tower = nn.Sequential(conv_bn(2 * width, width), conv_bn(width, width))
        self.cls_logits = nn.Conv2d(width, num_classes, 3, padding=1)
        self.box_reg = nn.Conv2d(width, 4, 3, padding=1)
        self.quality = nn.Conv2d(width, 1, 3, padding=1)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_prob) / prior_prob))
        self.postprocess = get_postprocessor(postprocessor)
        self.postprocessor_name = postprocessor
        self.score_thresh = score_thresh
        self.max_det = max_det
        cells = image_size // self.stride
        ys, xs = torch.meshgrid(torch.arange(cells), torch.arange(cells), indexing="ij")
        centers = torch.stack([xs, ys], dim=-1).reshape(-1, 2).float().add(0.5).mul(self.stride)
        self.register_buffer("centers", centers, persistent=False)

    def decode_boxes(self, reg):
        ltrb = F.softplus(reg) * self.stride * 2
        cx, cy = self.centers[:, 0], self.centers[:, 1]
        return torch.stack([cx - ltrb[..., 0], cy - ltrb[..., 1], cx + ltrb[..., 2], cy + ltrb[..., 3]], dim=-1)

    def forward(self, images):
        feats = self.tower(self.backbone(images))
        scores = self.cls_logits(feats).sigmoid().flatten(2).transpose(1, 2)
        quality = self.quality(feats).sigmoid().flatten(2).transpose(1, 2)
        boxes = self.decode_boxes(self.box_reg(feats).flatten(2).transpose(1, 2))
        return self.postprocess(boxes, scores, quality, score_thresh=self.score_thresh, max_det=self.max_det)
