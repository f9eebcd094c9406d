import torch
from blocks import BaseBlock, DecoderBlock
from engine import GraphEngine


def prepare(engine: GraphEngine) -> None:
    engine.capture("decode", DecoderBlock(64).cuda(), torch.zeros(4, 64, device="cuda"))
    engine.capture_typed("base", BaseBlock(64).cuda(), torch.zeros(4, 64, device="cuda"))
