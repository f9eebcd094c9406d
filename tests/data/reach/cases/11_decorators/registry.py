"""A step registry (identity decorator) and a timing wrapper (functools.wraps)."""

import functools
import time
from collections.abc import Callable
from typing import Any

STEPS: dict[str, Callable[..., Any]] = {}


def register(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        STEPS[name] = fn
        return fn

    return deco


def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        wrapper.elapsed = time.perf_counter() - t0  # type: ignore[attr-defined]
        return out

    return wrapper
