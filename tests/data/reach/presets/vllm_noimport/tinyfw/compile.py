"""No-op class decorator with the same name as the engine's compile decorator."""

from typing import TypeVar

T = TypeVar("T")


def support_torch_compile(cls: T) -> T:
    return cls
