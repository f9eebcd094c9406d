"""compare[:N]: each callable graphed by make_graphed_callables is also run eagerly, on copies of its
inputs, for its first N calls; the first output that differs is a finding.

Replays freeze Python: a branch, a scalar, an attribute read at capture stay as they were. Only running the
original code again shows that its answer changed. The eager run must not disturb the program: it runs
without autograd, on clones of the inputs, with the module's buffers (running statistics) and the RNG
states put back afterwards. A callable that draws random numbers is not compared (its eager answer differs
by design); that is said once."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from denpex.guard.lifecycle import State
from denpex.guard.record import leaves
from denpex.guard.report import Finding, say
from denpex.guard.sites import here

RTOL = ATOL = 1e-3
_REAL = "_denpex_guard_real_mgc"


def install(torch: Any, state: State, n: int) -> None:
    """Wrap make_graphed_callables when n > 0; put the original back when n == 0."""
    graphs = torch.cuda.graphs
    real = getattr(graphs, _REAL, None)
    if n <= 0:
        if real is not None:
            torch.cuda.make_graphed_callables = graphs.make_graphed_callables = real
            delattr(graphs, _REAL)
        return
    if real is None:
        real = graphs.make_graphed_callables
        setattr(graphs, _REAL, real)

    @functools.wraps(real)
    def make_graphed_callables(callables: Any, sample_args: Any, *args: Any, **kwargs: Any) -> Any:
        one = not isinstance(callables, tuple)
        items = (callables,) if one else callables
        eager = [c.forward if isinstance(c, torch.nn.Module) else c for c in items]
        site = here(2)
        out = real(callables, sample_args, *args, **kwargs)
        graphed = (out,) if one else tuple(out)
        wrapped = []
        for orig, g in zip(eager, graphed, strict=True):
            name = _name(orig)
            if isinstance(g, torch.nn.Module):
                g.forward = _Compared(torch, state, g.forward, orig, g, name, site, n)
                wrapped.append(g)
            else:
                wrapped.append(_Compared(torch, state, g, orig, None, name, site, n))
        return wrapped[0] if one else tuple(wrapped)

    torch.cuda.make_graphed_callables = graphs.make_graphed_callables = make_graphed_callables


def _name(fn: Any) -> str:
    q = getattr(fn, "__qualname__", None) or getattr(type(fn), "__qualname__", "callable")
    return str(q)


class _Compared:
    def __init__(self, torch: Any, state: State, graphed: Any, eager: Any, module: Any, name: str, site: str,
                 n: int) -> None:
        self.torch, self.state, self.graphed, self.eager = torch, state, graphed, eager
        self.module, self.name, self.site, self.left = module, name, site, n
        self.calls = 0
        functools.update_wrapper(self, graphed)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        torch = self.torch
        if self.left <= 0 or torch.cuda.is_current_stream_capturing():
            return self.graphed(*args, **kwargs)
        clones = _clone(torch, (args, kwargs))
        out = self.graphed(*args, **kwargs)
        self.calls += 1
        self.left -= 1
        try:
            self._check(clones, out)
        except Exception as exc:
            say(f"compare: {self.name}: not compared: {type(exc).__name__}: {exc}")
            self.left = 0
        return out

    def _check(self, clones: Any, out: Any) -> None:
        torch = self.torch
        c_args, c_kwargs = clones
        buffers = ([(b, b.detach().clone()) for b in self.module.buffers()] if self.module is not None else [])
        cpu_rng = torch.get_rng_state()
        cuda_rng = torch.cuda.get_rng_state()
        try:
            with torch.no_grad():
                ref = self.eager(*c_args, **c_kwargs)
            drew = not torch.equal(torch.cuda.get_rng_state(), cuda_rng) or not torch.equal(
                torch.get_rng_state(), cpu_rng)
        finally:
            torch.set_rng_state(cpu_rng)
            torch.cuda.set_rng_state(cuda_rng)
            with torch.no_grad():
                for b, saved in buffers:
                    b.copy_(saved)
        if drew:
            say(f"compare: {self.name} (graphed at {self.site}) draws random numbers: not compared")
            self.left = 0
            return
        got, want = list(leaves(out)), list(leaves(ref))
        for i, (g, w) in enumerate(zip(got, want, strict=False)):
            g, w = g.detach(), w.detach()
            if g.shape != w.shape or not torch.allclose(g.float(), w.float(), rtol=RTOL, atol=ATOL, equal_nan=True):
                diff = ((g.float() - w.float()).abs().max().item() if g.shape == w.shape else float("nan"))
                why = _explain(self.eager)
                self.state.reporter.report(Finding("replay-differs-from-eager", (
                    f"graphed callable {self.name!r} (graphed at {self.site}) differs from eager at call "
                    f"{self.calls}: output {i} max abs diff {diff:.4g} (rtol {RTOL:g}); "
                    + (f"explained by: {why}" if why else "no static finding explains it: look for Python "
                       "state (branches, scalars, attributes) read inside the callable"))),
                    (id(self), "differs"))
                self.left = 0
                return


def _clone(torch: Any, obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, tuple):
        return tuple(_clone(torch, o) for o in obj)
    if isinstance(obj, list):
        return [_clone(torch, o) for o in obj]
    if isinstance(obj, dict):
        return {k: _clone(torch, v) for k, v in obj.items()}
    return obj


def _explain(fn: Any) -> str:
    """The static findings of Denpex's source analyser inside the callable, where Denpex's analyser is
    importable in this interpreter (the guard alone carries none)."""
    try:
        target = inspect.unwrap(getattr(fn, "__func__", fn))
        path = inspect.getsourcefile(target)
        lines, first = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return ""
    if path is None:
        return ""
    try:
        from denpex.guard.explain import findings_in

        return findings_in(path, first, first + len(lines) - 1)
    except ImportError:
        return ""  # the job's interpreter has torch but not Denpex's analyser (tree-sitter, ...)
