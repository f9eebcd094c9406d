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


def _abort(text: str) -> tuple[str | None, int | None, str | None]:
    d = diagnose_text(text)
    v = d.verdict
    aborts = [f for f in d.findings if f.rule == "process-crash-signal" and "Aborted" in f.text]
    assert aborts, d.findings
    return (v.confidence if v else None), (v.finding.line if v else None), aborts[0].role


def test_an_abort_after_a_failed_check_is_collateral() -> None:
    log = ("F0401 15:13:19.040458  3143 net.cc:29] Check failed: status == 0 (1 vs. 0)\n"
           "*** Check failure stack trace: ***\n"
           "    @     0x2b06c5dcbb7d  google::LogMessage::Fail()\n"
           "    @           0x40e645  main\n"
           "Aborted (core dumped)\n")
    conf, _line, role = _abort(log)
    assert role == "collateral" and conf != "high"
    d = diagnose_text(log)
    assert d.first_error is not None and d.first_error.found is not None and d.first_error.found.line == 1


def test_an_abort_in_a_log_that_starts_inside_the_backtrace_is_collateral() -> None:
    log = ("[142a2d5a219e:00424] [23] /usr/bin/python3(_PyFunction_Vectorcall+0x7c)[0x55843112659c]\n"
           "[142a2d5a219e:00424] [24] /usr/bin/python3(_PyEval_EvalFrameDefault+0x81e)[0x55843110e96e]\n"
           "[142a2d5a219e:00424] *** End of error message ***\n"
           "Aborted (core dumped)\n")
    conf, _line, role = _abort(log)
    assert role == "collateral" and conf == "low"


def test_an_abort_that_nothing_explains_stays_the_crash() -> None:
    # faulthandler's own report of the abort, then bash's: the event starts in the log and names no other failure
    log = ("Fatal Python error: Aborted\n\n"
           "Current thread 0x00007f98009c4b80 (most recent call first):\n"
           '  File "<string>", line 1 in <module>\n'
           'bash: line 1: 11468 Aborted                 (core dumped) python3 -X faulthandler -c "import os; os.abort()"\n')
    conf, line, role = _abort(log)
    assert role == "initiating" and line == 5 and conf in ("high", "medium")
    conf, line, role = _abort("step 3 loss 1.25\nAborted (core dumped)\n")
    assert role == "initiating" and line == 2
