"""Which line of an event the verdict names (issue 22's fresh logs): an earlier error over a later report of
another one, the kernel's own assertion over the host's report of it, and an abort only where nothing
earlier in its event says what failed."""

from __future__ import annotations

from denpex.logs import diagnose_text

ORT_1 = ("onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : "
         "Einsum op: Transpose failed: CUDA failure 1: invalid argument ; GPU=1 ; hostname=h ; "
         "expr=cudaMemcpyAsync(out, in, n, cudaMemcpyDeviceToDevice, stream); ")
ORT_700 = ("2023-02-16 06:44:53.137742920 [E:onnxruntime:Default, cuda_call.cc:119 CudaCall] CUDA failure 700: an "
           "illegal memory access was encountered ; GPU=1 ; hostname=h ; expr=cudaLaunchHostFunc(stream, cb, p); ")


def test_a_later_report_of_another_code_does_not_take_the_earlier_error() -> None:
    d = diagnose_text(f"{ORT_1}\n\n{ORT_700}\n")
    assert d.verdict is not None
    assert (d.verdict.rule.id, d.verdict.finding.line) == ("onnxruntime-cuda-failure", 1)
    # alone, the 700 is still the illegal memory access
    d = diagnose_text(f"{ORT_700}\n")
    assert d.verdict is not None and d.verdict.rule.id == "cuda-illegal-memory-access"


HOST = "RuntimeError: Triton Error [CUDA]: device-side assert triggered"
DEVICE = "unknown:0: unknown: block: [0,0,0], thread: [128,0,0] Assertion `index out of bounds: 0 <= tmp4 < 32000` failed."


def test_the_kernels_assertion_wins_over_the_hosts_report_printed_before_it() -> None:
    d = diagnose_text(f"  File \"<string>\", line 8, in launcher\n{HOST}\n{DEVICE}\n{DEVICE}\n")
    assert d.verdict is not None
    assert (d.verdict.rule.id, d.verdict.finding.line) == ("cuda-device-side-assert", 3)
    # in the usual order (the device's printf flushed first) the assertion is first anyway
    d = diagnose_text(f"{DEVICE}\n{HOST}\n")
    assert d.verdict is not None and d.verdict.finding.line == 1
    # the host's report alone stays the verdict
    d = diagnose_text(f"{HOST}\n")
    assert d.verdict is not None and d.verdict.finding.line == 1
