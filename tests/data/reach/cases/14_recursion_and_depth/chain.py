"""A call chain 30 deep: beyond any sane depth budget, so it is a known miss, not a wrong finding."""

import torch


def level_00(x: torch.Tensor) -> torch.Tensor:
    return level_01(x + 0)


def level_01(x: torch.Tensor) -> torch.Tensor:
    return level_02(x + 1)


def level_02(x: torch.Tensor) -> torch.Tensor:
    return level_03(x + 2)


def level_03(x: torch.Tensor) -> torch.Tensor:
    return level_04(x + 3)


def level_04(x: torch.Tensor) -> torch.Tensor:
    return level_05(x + 4)


def level_05(x: torch.Tensor) -> torch.Tensor:
    return level_06(x + 5)


def level_06(x: torch.Tensor) -> torch.Tensor:
    return level_07(x + 6)


def level_07(x: torch.Tensor) -> torch.Tensor:
    return level_08(x + 7)


def level_08(x: torch.Tensor) -> torch.Tensor:
    return level_09(x + 8)


def level_09(x: torch.Tensor) -> torch.Tensor:
    return level_10(x + 9)


def level_10(x: torch.Tensor) -> torch.Tensor:
    return level_11(x + 10)


def level_11(x: torch.Tensor) -> torch.Tensor:
    return level_12(x + 11)


def level_12(x: torch.Tensor) -> torch.Tensor:
    return level_13(x + 12)


def level_13(x: torch.Tensor) -> torch.Tensor:
    return level_14(x + 13)


def level_14(x: torch.Tensor) -> torch.Tensor:
    return level_15(x + 14)


def level_15(x: torch.Tensor) -> torch.Tensor:
    return level_16(x + 15)


def level_16(x: torch.Tensor) -> torch.Tensor:
    return level_17(x + 16)


def level_17(x: torch.Tensor) -> torch.Tensor:
    return level_18(x + 17)


def level_18(x: torch.Tensor) -> torch.Tensor:
    return level_19(x + 18)


def level_19(x: torch.Tensor) -> torch.Tensor:
    return level_20(x + 19)


def level_20(x: torch.Tensor) -> torch.Tensor:
    return level_21(x + 20)


def level_21(x: torch.Tensor) -> torch.Tensor:
    return level_22(x + 21)


def level_22(x: torch.Tensor) -> torch.Tensor:
    return level_23(x + 22)


def level_23(x: torch.Tensor) -> torch.Tensor:
    return level_24(x + 23)


def level_24(x: torch.Tensor) -> torch.Tensor:
    return level_25(x + 24)


def level_25(x: torch.Tensor) -> torch.Tensor:
    return level_26(x + 25)


def level_26(x: torch.Tensor) -> torch.Tensor:
    return level_27(x + 26)


def level_27(x: torch.Tensor) -> torch.Tensor:
    return level_28(x + 27)


def level_28(x: torch.Tensor) -> torch.Tensor:
    return level_29(x + 28)


def level_29(x: torch.Tensor) -> torch.Tensor:
    return x / x.sum().item()  # todoruleid: capture-item-sync
