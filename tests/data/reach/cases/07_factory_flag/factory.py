from torch import nn
from zoo import LargeNet, SmallNet


def build_model(dim: int, large: bool) -> nn.Module:
    if large:
        return LargeNet(dim)
    return SmallNet(dim)
