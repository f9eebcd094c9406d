"""Every failing log from the real H200 runs is diagnosed with the right rule, line and rank.

The expected rule per scenario comes from tests/data/gpu/FINDINGS.md; the expected line is the
first line of the log that holds the root-cause text FINDINGS gives for that scenario.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.logs import diagnose_path
from tests.conftest import GPU_RESULTS

E900 = "operation not permitted when stream is capturing"
COPY = "Cannot copy between CPU and CUDA tensors during CUDA graph capture"

# log (relative to gpu/results) -> (accepted rules, text of the root-cause line, rank or None)
EXPECTED: dict[str, tuple[set[str], str, int | None]] = {
    "logs/01_item_in_capture.log": ({"capture-item-sync"}, E900, None),
    "logs/02_cpu_in_capture.log": ({"capture-host-copy"}, COPY, None),
    "logs/03_tolist_in_capture.log": ({"capture-host-copy"}, COPY, None),
    "logs/04_print_tensor_in_capture.log": ({"capture-print-tensor"}, E900, None),
    "logs/05_implicit_bool_if.log": ({"capture-implicit-bool"}, E900, None),
    "logs/06_nonzero_in_capture.log": ({"capture-dynamic-shape-op"}, E900, None),
    "logs/07_bool_mask_index.log": ({"capture-dynamic-shape-op"}, E900, None),
    "logs/08_unique_in_capture.log": ({"capture-dynamic-shape-op"}, E900, None),
    "logs/09_synchronize_in_capture.log": ({"capture-explicit-sync"}, E900, None),
    "logs/10_tensor_ctor_in_capture.log": ({"capture-host-copy"}, COPY, None),
    "logs/11_to_cuda_pageable_in_capture.log": ({"capture-host-copy"}, COPY, None),
    "logs/15_no_warmup_matmul.log": ({"lazy-init-cublas"}, "CUBLAS_STATUS_NOT_INITIALIZED", None),
    "logs/16_no_warmup_conv_benchmark.log": ({"lazy-init-cudnn"}, "CUDNN_STATUS_INTERNAL_ERROR", None),
    "logs/17_no_warmup_train_step.log": ({"lazy-init-cublas"}, "CUBLAS_STATUS_NOT_INITIALIZED", None),
    # the failing op is ordinary arithmetic on an un-forked side stream: only the generic 900 is honest
    "logs/18_side_stream_no_wait.log": (
        {"cuda-900-capture-unsupported", "capture-side-stream-no-fork"}, E900, None),
    "logs/19_side_stream_fork_no_join.log": ({"cuda-904-capture-unjoined"}, "capturing stream has unjoined work", None),
    "logs/21_rng_custom_generator_unregistered.log": (
        {"rng-unregistered-generator"}, "Attempt to increase offset for a CUDA generator", None),
    "logs/22_adam_capturable_false.log": ({"optim-capturable-false"}, "Attempting CUDA graph capture of step()", None),
    "logs/25_replay_after_del_input_empty_cache.log": ({"cuda-illegal-memory-access"}, "illegal memory access", None),
    "logs/27_batch_shape_change.log": ({"replay-shape-change"}, "The size of tensor a (8) must match", None),
    "logs/35_make_graphed_callables_item.log": ({"capture-item-sync"}, E900, None),
    "logs/36_sync_debug_error_item_in_capture.log": (
        {"capture-item-sync"}, "called a synchronizing CUDA operation", None),
    "logs/39_item_in_capture_relaxed_mode.log": ({"capture-item-sync"}, E900, None),
    "logs/41_sync_debug_warn_item_in_capture.log": ({"capture-item-sync"}, E900, None),
    "logs/44_to_cuda_pageable_nonblocking_in_capture.log": ({"capture-host-copy"}, COPY, None),
    "logs/45_setitem_int_index_scalar_in_capture.log": ({"capture-host-copy"}, COPY, None),
    "logs/46_setitem_tensor_index_scalar_in_capture.log": ({"capture-host-copy"}, COPY, None),
    "logs/48_event_query_in_capture.log": (
        {"cuda-907-captured-event", "capture-explicit-sync"}, "operation not permitted on an event last recorded", None),
    "logs/49_event_synchronize_in_capture.log": (
        {"cuda-907-captured-event", "capture-explicit-sync"}, "operation not permitted on an event last recorded", None),
    "logs/50_event_query_precapture_event_in_capture.log": ({"capture-explicit-sync"}, E900, None),
    "logs/51_current_stream_synchronize_in_capture.log": ({"capture-explicit-sync"}, E900, None),
    "logs/52_capture_begin_default_stream.log": (
        {"stream-capture-default-stream"}, "CUDA graphs must be captured on a non-default stream", None),
    "logs/53_manual_seed_in_capture.log": (
        {"rng-manual-seed-in-capture"}, "can be called during stream capture only if new seed", None),
    "logs/57_gradscaler_step_in_capture.log": ({"capture-gradscaler-step"}, E900, None),
    "logs/59_adam_capturable_load_noncapturable_state.log": (
        {"optim-capturable-false"}, "Attempting CUDA graph capture of step()", None),
    "logs/60_adam_capturable_load_state_flag_restored_step_cpu.log": (
        {"optim-capturable-device"}, "If capturable=True, params and state_steps must be on supported", None),
    "logs/61_make_graphed_callables_autocast_cache.log": (
        {"mgc-autocast-cache"}, "make_graphed_callables does not support the autocast caching", None),
    "logs/63_compile_ro_cudamallocasync.log": ({"alloc-cudamallocasync"}, "does not yet support checkPoolLiveAllocations", None),
    "logs/64_logging_tensor_in_capture.log": ({"capture-print-tensor", "capture-logging-error"}, E900, None),
    "logs/66_fstring_tensor_in_capture.log": ({"capture-print-tensor"}, E900, None),
    "logs/68_compile_ro_cudagraph_or_error_mutated_input.log": (
        {"compile-skip-cudagraphs"}, "skipping cudagraphs due to", None),
    "logs/71_checkpoint_dropout_in_captured_fwd_bwd.log": (
        {"cuda-906-legacy-stream-dependency"}, "legacy stream depend on a capturing blocking stream", None),
    "logs/72_checkpoint_dropout_no_preserve_rng_in_capture.log": (
        {"cuda-906-legacy-stream-dependency"}, "legacy stream depend on a capturing blocking stream", None),
    "extra/42_compile_ro_overwritten_record_output.log": (
        {"compile-output-overwritten"}, "accessing tensor output of CUDAGraphs that has been overwritten", None),
    "extra/43_compile_ro_overwritten_warmup_output.log": (
        {"compile-output-overwritten"}, "accessing tensor output of CUDAGraphs that has been overwritten", None),
    "extra/69_dataloader_pin_thread_global_capture.run1.log": (
        {"capture-foreign-thread"}, "in pin memory thread", None),
    "extra/70_dataloader_prefetch_h2d_thread_global_capture.run1.log": (
        {"capture-foreign-thread"}, "in pin memory thread", None),
    "multi/a1_rank1_dies.log": ({"capture-item-sync"}, E900, 1),
    "extra/b2_record_rank1_dies.log": ({"capture-item-sync"}, E900, 1),
    "multi/d_allreduce_in_graph_no_warmup.log": ({"nccl-in-capture"}, "operation not permitted when stream is capturing", None),
}


def _first_line_with(path: Path, needle: str) -> int:
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, start=1):
            if needle.encode() in raw:
                return no
    raise AssertionError(f"{needle!r} not in {path}")


def test_gpu_logs_are_in_the_repository() -> None:
    missing = [n for n in EXPECTED if not (GPU_RESULTS / n).is_file()]
    assert not missing, f"missing from {GPU_RESULTS}: {missing}"
    assert len(_healthy_logs()) >= 20, "the fixed twins' logs are missing"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_failing_gpu_log_is_diagnosed(name: str) -> None:
    path = GPU_RESULTS / name
    rules, needle, rank = EXPECTED[name]
    d = diagnose_path(path)
    assert d.verdict is not None, f"{name}: nothing diagnosed"
    v = d.verdict
    assert v.rule.id in rules, f"{name}: got {v.rule.id} (via {v.via}), want one of {rules}"
    assert v.finding.line == _first_line_with(path, needle), f"{name}: verdict line {v.finding.line}: {v.finding.text}"
    if rank is not None:
        assert v.finding.who.rank == rank


def _healthy_logs() -> list[str]:
    return sorted(
        str(p.relative_to(GPU_RESULTS)) for p in (GPU_RESULTS / "logs").glob("*__fixed*.log")
    )


@pytest.mark.parametrize("name", _healthy_logs())
def test_fixed_twin_has_no_error_verdict(name: str) -> None:
    d = diagnose_path(GPU_RESULTS / name)
    assert d.verdict is None or d.verdict.rule.severity != "error", (
        f"{name}: {d.verdict.rule.id if d.verdict else None} at line "
        f"{d.verdict.finding.line if d.verdict else None}"
    )


def test_chained_901_is_collateral_not_the_verdict() -> None:
    d = diagnose_path(GPU_RESULTS / "logs/01_item_in_capture.log")
    roles = {f.rule: f.role for f in d.findings}
    assert roles.get("cuda-901-capture-invalidated") == "collateral"
    assert d.verdict is not None and d.verdict.rule.id != "cuda-901-capture-invalidated"


def test_frames_of_initiating_exception() -> None:
    d = diagnose_path(GPU_RESULTS / "logs/01_item_in_capture.log")
    assert d.verdict is not None
    user = [(f.path, f.line, f.function) for f in d.verdict.frames if not f.is_library]
    assert user[-1] == ("/workspace/gpu/scenarios/01_item_in_capture.py", 9, "step")


def test_fingerprint_is_the_sync_debug_warning_before_the_error() -> None:
    d = diagnose_path(GPU_RESULTS / "logs/41_sync_debug_warn_item_in_capture.log")
    assert d.verdict is not None and d.verdict.fingerprint is not None
    assert "called a synchronizing CUDA operation" in d.verdict.fingerprint.text
    assert d.verdict.fingerprint.line < d.verdict.finding.line


def test_asynchronous_error_says_where_cuda_noticed() -> None:
    d = diagnose_path(GPU_RESULTS / "logs/25_replay_after_del_input_empty_cache.log")
    assert d.verdict is not None
    notes = " ".join(d.verdict.notes)
    assert "CUDA_LAUNCH_BLOCKING=1" in notes and "asynchronously" in notes
