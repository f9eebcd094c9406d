"""Every status code of the libraries' own string tables (tests/data/logs12/strings, read from libcudart
12.0-13.5, the 580 driver, cuBLAS 13, cuDNN 9.19, NCCL 2.28.9, cuSPARSE; cuFFT/cuRAND/cuSOLVER from their
headers) is in the rule book's tables, and a log line in each form the libraries print names the code: its
exact name, its exact message, its number."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.logs import diagnose_text
from denpex.rulebook import load_rulebook
from tests.conftest import DATA

STRINGS = DATA / "logs12" / "strings"
BOOK = load_rulebook()


def _rows(name: str) -> list[list[str]]:
    out = []
    for line in (STRINGS / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        out.append(line.split("\t"))
    return out


def _named(text: str) -> tuple[str | None, str | None, bool]:
    """(verdict rule, status-code name on the verdict's finding, verdict rule is a generic family)."""
    d = diagnose_text(text)
    if d.verdict is None:
        return None, None, False
    e = d.verdict.finding.entry
    return d.verdict.rule.id, e.name if e else None, d.verdict.rule.generic


def _cases() -> list[tuple[str, str, str, int, str]]:
    """(rule, form, name, number, log line) for every code of every table."""
    cases = []
    for v in ("12.0", "12.9", "13.0", "13.5"):
        for num, name, msg in _rows(f"cudart-{v}.tsv"):
            if num == "0":
                continue
            cases.append(("cuda-runtime-error", f"message@{v}", name, int(num), f"RuntimeError: CUDA error: {msg}"))
            cases.append(("cuda-runtime-error", f"name@{v}", name, int(num),
                          f"Search for `{name}' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information."))
    for num, name, msg in _rows("driver-580.159.04.tsv"):
        if num == "0":
            continue
        cases.append(("cuda-driver-error", "name", name, int(num), f"XlaRuntimeError: INTERNAL: {name}: {msg}"))
        cases.append(("cuda-driver-error", "message", name, int(num), f"RuntimeError: CUDA driver error: {msg}"))
        cases.append(("cuda-driver-error", "triton", name, int(num), f"RuntimeError: Triton Error [CUDA]: {msg}"))
        cases.append(("cuda-driver-error", "number", name, int(num), f"kernel launch failed (CUresult={num})"))
    for num, name, msg in _rows("cublas-13.tsv"):
        if name.endswith("SUCCESS"):
            continue
        cases.append(("cublas-status", "name", name, int(num),
                      f"RuntimeError: CUDA error: {name} when calling `cublasGemmStridedBatchedEx(handle)`"))
        cases.append(("cublas-status", "message", name, int(num), f"RuntimeError: cuBLAS Error: {msg}"))
    for num, name in _rows("cudnn-9.19.tsv"):
        if name in ("CUDNN_STATUS_SUCCESS", "CUDNN_UNKNOWN_STATUS"):
            continue
        cases.append(("cudnn-status", "name", name, int(num), f"RuntimeError: cuDNN error: {name}"))
    for num, name in _rows("cusolver-13.tsv"):
        if name.endswith("SUCCESS"):
            continue
        cases.append(("cusolver-status", "name", name, int(num), f"torch._C._LinAlgError: cusolver error: {name}, when calling `cusolverDnXgeqrf(handle)`"))
    for num, name in _rows("cufft-13.tsv"):
        if name.endswith("SUCCESS"):
            continue
        cases.append(("cufft-status", "name", name, int(num), f"RuntimeError: cuFFT error: {name}"))
    for num, name in _rows("curand-13.tsv"):
        if name.endswith("SUCCESS"):
            continue
        cases.append(("curand-status", "name", name, int(num), f"cupy_backends.cuda.libs.curand.CURANDError: {name}"))
    for num, name, _msg in _rows("cusparse-13.tsv"):
        if name.endswith("SUCCESS") or name == "unrecognized error code":  # the dump's codes past the enum
            continue
        cases.append(("cusparse-status", "name", name, int(num), f"RuntimeError: {name}"))
    nccl_names = {1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError", 4: "ncclInvalidArgument",
                  5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress"}
    for num, msg in _rows("nccl-2.28.9.tsv"):
        n = int(num)
        if n == 0:
            continue
        cases.append(("nccl-result", "message", nccl_names[n], n,
                      f"torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, {msg}, NCCL version 2.28.9"))
    return cases


CASES = _cases()


def test_tables_hold_every_code_of_the_libraries() -> None:
    for rule_id in ("cuda-runtime-error", "cuda-driver-error", "cublas-status", "cudnn-status", "cusolver-status",
                    "cufft-status", "curand-status", "cusparse-status", "nccl-result"):
        rule = BOOK.get(rule_id)
        assert rule is not None and rule.codes, rule_id
    names = {(r, name) for r, _f, name, _n, _t in CASES}
    for r, name in names:
        rule = BOOK.get(r)
        assert rule is not None
        entry = next((e for e in rule.codes if e.name == name), None)
        assert entry is not None, f"{r}: {name} missing from the table"
    assert len({n for r, _f, n, _x, _t in CASES if r == "cuda-runtime-error"}) == 137  # 138 codes of 12.0-13.5 less cudaSuccess


def test_every_cudart_message_of_every_version_is_in_the_table() -> None:
    rule = BOOK.get("cuda-runtime-error")
    assert rule is not None
    by_name = {e.name: e for e in rule.codes}
    for v in ("12.0", "12.9", "13.0", "13.5"):
        for num, name, msg in _rows(f"cudart-{v}.tsv"):
            if num == "0":
                continue
            assert by_name[name].number == int(num)
            assert msg in by_name[name].messages, f"{v} {name}: {msg!r}"


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}:{c[1]}:{c[2]}" for c in CASES])
def test_log_line_names_the_code(case: tuple[str, str, str, int, str]) -> None:
    """The verdict names the code. A specific rule may give the verdict for the same line (a capture error,
    an OOM, an illegal address, a lazy cuBLAS init); the code still reaches the verdict."""
    rule_id, form, name, _num, text = case
    got_rule, got_code, generic = _named(text)
    assert got_rule is not None, f"nothing diagnosed in {text!r}"
    if got_rule == rule_id:
        if got_code != name and form.startswith(("message", "triton")):
            # two codes share one text ("device kernel image is invalid" is 200 and 300): the message names either
            assert _same_message(rule_id, got_code, name), f"{text!r}: named {got_code}"
        else:
            assert got_code == name, f"{text!r}: named {got_code}"
    else:
        assert not generic, f"{text!r}: taken by another generic family {got_rule}"
        # a specific rule took the line: a table still names the code when one matched the same line
        if got_code is not None:
            assert got_code == name or _same_code(got_code, name), f"{text!r}: {got_rule} names {got_code}"


def _same_message(rule_id: str, a: str | None, b: str) -> bool:
    rule = BOOK.get(rule_id)
    assert rule is not None
    msgs = {e.name: set(e.messages) for e in rule.codes}
    return a is not None and bool(msgs.get(a, set()) & msgs.get(b, set()))


def _same_code(a: str, b: str) -> bool:
    """Runtime and driver names of one code (cudaErrorIllegalAddress / CUDA_ERROR_ILLEGAL_ADDRESS)."""
    rt, drv = BOOK.get("cuda-runtime-error"), BOOK.get("cuda-driver-error")
    assert rt is not None and drv is not None
    num = {e.name: e.number for e in (*rt.codes, *drv.codes)}
    return num.get(a) is not None and num.get(a) == num.get(b)


def test_unknown_text_after_a_known_prefix_is_not_a_code() -> None:
    for text in ("RuntimeError: CUDA error: the cat unplugged the GPU", "CUresult=4242",
                 "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_A_REAL_STATUS_AT_ALL",
                 "NCCL error in: a.cpp:1, everything is fine"):
        d = diagnose_text(text)
        assert d.verdict is None, f"{text!r}: {d.verdict.rule.id if d.verdict else None}"


def test_message_that_extends_a_shorter_one_names_the_longer_code() -> None:
    # "invalid device ordinal" (101) must not be read as a shorter message that is its prefix
    rule, code, _g = _named("RuntimeError: CUDA error: invalid device ordinal")
    assert (rule, code) == ("cuda-runtime-error", "cudaErrorInvalidDevice")
    rule, code, _g = _named("RuntimeError: CUDA error: invalid argument (while launching)")
    assert (rule, code) == ("cuda-runtime-error", "cudaErrorInvalidValue")


def test_code_specific_fix_leads_the_verdict() -> None:
    d = diagnose_text("torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device")
    assert d.verdict is not None
    assert d.verdict.finding.entry is not None and d.verdict.finding.entry.number == 209
    assert d.verdict.fix_text().startswith("Install a build compiled for this GPU")
    assert d.verdict.graph_related == "no"
    assert not any("asynchronously" in n for n in d.verdict.notes)  # not a kernel fault


def test_kernel_fault_codes_are_asynchronous() -> None:
    d = diagnose_text("RuntimeError: CUDA error: unspecified launch failure")
    assert d.verdict is not None
    assert any("asynchronously" in n for n in d.verdict.notes)


def test_strings_are_the_libraries_own(tmp_path: Path) -> None:
    """A few texts checked against what the libraries printed (not retyped from memory)."""
    rt = {r[1]: r[2] for r in _rows("cudart-13.0.tsv")}
    assert rt["cudaErrorDevicesUnavailable"] == "CUDA-capable device(s) is/are busy or unavailable"
    assert rt["cudaErrorNoKernelImageForDevice"] == "no kernel image is available for execution on the device"
    assert rt["cudaErrorECCUncorrectable"] == "uncorrectable ECC error encountered"
    drv = {r[1]: r[2] for r in _rows("driver-580.159.04.tsv")}
    assert drv["CUDA_ERROR_NO_BINARY_FOR_GPU"] == rt["cudaErrorNoKernelImageForDevice"]
