"""capture-explicit-sync (DPX114): `torch.cuda.synchronize()`, `stream.synchronize()`, `event.query()` inside a
capture: a sync on a capturing stream is illegal (CUDA 900)."""

from __future__ import annotations

from denpex.source import ops
from denpex.source.rules._api import CallSite, Claim, Hazard, SourceRule, Walk
from denpex.source.rules._calls import imported_root


def _explicit(c: CallSite) -> bool:
    """A wait the op tables list (generated from the installed torch): `torch.cuda.synchronize()`,
    `torch.accelerator.synchronize()`, and the `synchronize` / `query` methods of `torch.cuda.Stream` and
    `torch.cuda.Event` on a stream or event (or on a call that makes a stream, `torch.cuda.current_stream()`)."""
    q, rk, recv, m = c.qualname, c.receiver_kind, c.receiver, c.method
    if q is not None and (c.method is None or imported_root(c.ix, c.func)) and ops.is_explicit_sync(q):
        return True
    if m is None or recv is None:
        return False
    cat = rk.cat if rk is not None else None
    if cat is None and recv.type == "call" and "stream" in c.ix.text(recv):
        cat = "stream"
    cls = {"stream": "Stream", "event": "Event"}.get(cat or "")
    return cls is not None and ops.is_explicit_sync(f"torch.cuda.{cls}.{m}")


def _sync(w: Walk, c: CallSite) -> bool:
    if not _explicit(c):
        return False
    w.report("cuda-synchronize", c.node, c.frame,
             [w.fixes.guard(c.stmt, c.frame), w.fixes.move_after_replay(c.stmt, c.direct)])
    return True


RULE = SourceRule(
    id="capture-explicit-sync",
    hazards=(Hazard("cuda-synchronize"),),
    claims=(Claim(70, _sync),),
)
