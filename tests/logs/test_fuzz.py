"""Property tests: any bytes in, a sane diagnosis out, with honest line numbers."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from denpex.logs import diagnose_stream
from denpex.logs.normalise import clean, segments
from denpex.rulebook.safety import problems

SIGNATURES = [
    b"torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing",
    b"CUDA error: operation failed due to a previous error during capture",
    b"[rank3]:[E1130 00:00:00 x.cpp:1] [Rank 3] Watchdog caught collective operation timeout: "
    b"WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1) ran for 2 milliseconds",
    b"RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned.",
]
NOISE = st.sampled_from([b"\x1b[31m", b"\x1b[0m", b"\r", b"\r\n", b"\n", b"\x00", b"\xff\xfe", b"[36m",
                         b"[rank1]:", b"[default0]:[rank0]: ", b"\xe2\x96\x88", b"Traceback (most recent call last):\n",
                         b'  File "/w/t.py", line 3, in f\n', b"\t", b" " * 50])
CHUNKS = st.lists(st.one_of(st.binary(max_size=64), NOISE, st.sampled_from(SIGNATURES)), max_size=60)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CHUNKS)
def test_any_bytes_give_a_consistent_diagnosis(chunks: list[bytes]) -> None:
    data = b"".join(chunks)
    d = diagnose_stream(io.BytesIO(data))
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert d.stats.lines == n_lines
    original = data.split(b"\n")
    for f in d.findings:
        assert 1 <= f.line <= max(n_lines, 1)
        raw = original[f.line - 1].decode("utf-8", "replace")
        # the reported text is a (cleaned) piece of the very line it names
        assert f.text.strip()[:40] in " ".join(segments(raw)) or f.text.strip()[:40] in clean(raw)
    if d.verdict is not None:
        assert d.verdict.confidence in ("high", "medium", "low")
        assert d.verdict.finding in d.findings
    d.to_json()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab()*+?.|[]{}\\d,0123", max_size=20))
def test_regex_safety_check_never_raises(pattern: str) -> None:
    problems(pattern)
