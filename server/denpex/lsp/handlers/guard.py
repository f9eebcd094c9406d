"""Every handler is guarded: a fault is logged through `window/logMessage` (never `window/showMessage`)
with its traceback, the request is answered with a harmless default, and the server keeps serving."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer

P = ParamSpec("P")
R = TypeVar("R")
D = TypeVar("D")


def guarded(default: D) -> Callable[[Callable[Concatenate[DenpexLanguageServer, P], R]],
                                    Callable[Concatenate[DenpexLanguageServer, P], R | D]]:
    def deco(fn: Callable[Concatenate[DenpexLanguageServer, P], R]
             ) -> Callable[Concatenate[DenpexLanguageServer, P], R | D]:
        @functools.wraps(fn)
        def wrapper(ls: DenpexLanguageServer, /, *args: P.args, **kwargs: P.kwargs) -> R | D:
            try:
                return fn(ls, *args, **kwargs)
            except Exception:
                ls.log_exception(f"{fn.__module__.rsplit('.', 1)[-1]} failed")
                return default
        return wrapper
    return deco


def guarded_async(default: D) -> Callable[[Callable[Concatenate[DenpexLanguageServer, P], Awaitable[R]]],
                                          Callable[Concatenate[DenpexLanguageServer, P], Awaitable[R | D]]]:
    def deco(fn: Callable[Concatenate[DenpexLanguageServer, P], Awaitable[R]]
             ) -> Callable[Concatenate[DenpexLanguageServer, P], Awaitable[R | D]]:
        @functools.wraps(fn)
        async def wrapper(ls: DenpexLanguageServer, /, *args: P.args, **kwargs: P.kwargs) -> R | D:
            try:
                return await fn(ls, *args, **kwargs)
            except asyncio.CancelledError:
                raise
            except Exception:
                ls.log_exception(f"{fn.__module__.rsplit('.', 1)[-1]} failed")
                return default
        return wrapper
    return deco
