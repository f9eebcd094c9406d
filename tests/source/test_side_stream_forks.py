"""capture-side-stream-no-fork: a side stream forked from the capturing stream by an event, or earlier in the same
capture, is part of the capture (issue 19: Megatron-LM's all-gather wait paths, forked by the prefetch that
issued the gather with `ag_stream.wait_event(outer_sync_event)`)."""

from __future__ import annotations

from tests.source.helpers import workspace_flags

COMM = '''import torch

ag_stream = torch.cuda.Stream()
other = torch.cuda.Stream()
done = torch.cuda.Event()


def prefetch(w):
    start = torch.cuda.Event()
    start.record(torch.cuda.current_stream())
    ag_stream.wait_event(start)
    with torch.cuda.stream(ag_stream):
        out = w * 2
    return out


def wait_gather(w):
    with torch.cuda.stream(ag_stream):
        done.record()
    torch.cuda.current_stream().wait_stream(ag_stream)


def use_other(w):
    with torch.cuda.stream(other):
        y = w + 1
    torch.cuda.current_stream().wait_stream(other)
    return y
'''


def _flags(body: str) -> set[int]:
    main = ("import torch\nfrom comm import prefetch, wait_gather, use_other\n\nw = torch.ones(4, device='cuda')\n"
            f"g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n{body}")
    return {line for p, line, rule in workspace_flags({"comm.py": COMM, "main.py": main})
            if p == "comm.py" and rule == "capture-side-stream-no-fork"}


def test_a_fork_by_an_event_in_the_block_is_a_fork() -> None:
    assert 12 not in _flags("    out = prefetch(w)\n")


def test_a_stream_forked_earlier_in_the_capture_needs_no_fork_again() -> None:
    assert _flags("    out = prefetch(w)\n    wait_gather(w)\n") == set()


def test_a_stream_never_forked_in_the_capture_is_still_reported() -> None:
    assert _flags("    wait_gather(w)\n    out = prefetch(w)\n") == {18}  # the wait comes first: not forked yet
    assert _flags("    out = prefetch(w)\n    y = use_other(w)\n") == {24}  # another stream
