import torch
from blocks import EncoderBlock
from engine import GraphEngine


def prepare(engine: GraphEngine) -> None:
    engine.capture("encode", EncoderBlock(64).cuda(), torch.zeros(4, 64, device="cuda"))
