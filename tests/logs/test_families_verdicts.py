"""How verdicts use the issue-12 families: a generic family never takes a line or an event from a specific
rule, two lines of one event give the more specific one, the phase comes from frames or a framework's capture
lines, and an adjacent failure says so. Texts are the libraries' own (see each rule's references)."""

from __future__ import annotations

from pathlib import Path

from denpex.logs import diagnose_text
from denpex.logs.diagnose import Verdict

E900 = "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of "
       "139.81 GiB of which 301.00 MiB is free.")


def _v(text: str) -> Verdict:
    d = diagnose_text(text)
    assert d.verdict is not None, text
    return d.verdict


def test_specific_rule_keeps_its_line_and_gets_the_code() -> None:
    v = _v(E900)
    assert v.rule.id == "cuda-900-capture-unsupported"
    assert v.finding.entry is not None and (v.finding.entry.name, v.finding.entry.number) == (
        "cudaErrorStreamCaptureUnsupported", 900)
    assert v.phase is not None and v.phase.phase == "capture"  # the error exists only during capture


def test_generic_line_yields_to_a_specific_rule_later_in_the_same_event() -> None:
    # tests/data/gpu/results/multi/d_allreduce_in_graph_no_warmup.log, lines 15-18
    text = "\n".join([
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.28.9",
        "[rank0]: ncclUnhandledCudaError: Call to CUDA function failed.",
        "[rank0]: Last error:",
        "[rank0]: Cuda failure 'operation not permitted when stream is capturing'",
    ])
    v = _v(text)
    assert v.rule.id == "nccl-in-capture" and v.finding.line == 4


def test_generic_line_alone_gives_the_family_verdict() -> None:
    v = _v("[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, "
           "remote process exited or there was a network error, NCCL version 2.26.2")
    assert v.rule.id == "nccl-result" and v.finding.entry is not None
    assert v.finding.entry.name == "ncclRemoteError"
    assert v.graph_related == "no" and v.notes[0].startswith("Adjacent failure")


def test_terminate_and_its_what_line_give_the_more_specific_one() -> None:
    v = _v("terminate called after throwing an instance of 'c10::DistBackendError'\n"
           "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: "
           "CUDA error: operation not permitted when stream is capturing")
    assert v.rule.id == "nccl-watchdog-capture-query" and v.finding.line == 2
    v = _v("terminate called after throwing an instance of 'c10::DistBackendError'\n"
           "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Watchdog caught collective operation timeout: "
           "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=45000) ran for 45001 milliseconds before timing out.")
    assert v.rule.id == "nccl-watchdog-timeout" and v.finding.line == 2
    assert any("only wraps this message" in n for n in v.notes)


def test_terminate_with_an_unknown_message_is_its_own_verdict() -> None:
    v = _v("terminate called after throwing an instance of 'std::runtime_error'\n  what():  widget exploded")
    assert v.rule.id == "cpp-terminate" and v.finding.line == 1


def test_vllm_capture_line_puts_an_oom_in_capture_until_capture_finishes() -> None:
    during = "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  40%|████      | 27/67 [00:05<00:07,  5.43it/s]\n" + OOM
    v = _v(during)
    assert (v.rule.id, v.via) == ("alloc-oom-during-capture", "cuda-oom")
    assert v.phase is not None and v.phase.phase == "capture" and v.phase.line == 1
    assert any(n.startswith("During capture:") and "private memory pool" in n for n in v.notes)
    after = ("Capturing CUDA graphs (decode, FULL): 100%|██████████| 51/51\n"
             "(EngineCore_DP0 pid=212) INFO 10-06 12:00:40 [gpu_model_runner.py:3480] Graph capturing finished in 8 secs, took 0.31 GiB\n"
             + OOM)
    v = _v(after)
    assert v.rule.id == "cuda-oom" and v.phase is None
    assert v.notes[0].startswith("Adjacent failure unless it happened in a CUDA-graph capture or replay")


def test_sglang_capture_lines_open_and_close_the_phase() -> None:
    begin = "[2025-05-02 16:14:33] Capture cuda graph begin. This can take up to several minutes. avail mem=0.00 GB\n"
    assert _v(begin + OOM).rule.id == "alloc-oom-during-capture"
    end = "[2026-06-05 18:12:34] Capture cuda graph end. Time elapsed: 1.23 s. mem usage=0.5 GB\n"
    assert _v(begin + end + OOM).rule.id == "cuda-oom"


def test_frames_under_capture_end_put_an_oom_in_capture() -> None:
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 13, in <module>',
        "    with torch.cuda.graph(g):",
        '  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/cuda/graphs.py", line 265, in __exit__',
        "    self.cuda_graph.capture_end()",
        '  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/cuda/graphs.py", line 126, in capture_end',
        "    super().capture_end()",
        "torch.AcceleratorError: CUDA error: out of memory",
    ])
    v = _v(text)
    assert v.rule.id == "alloc-oom-during-capture"
    assert v.phase is not None and "capture_end" in v.phase.evidence
    assert v.finding.entry is not None and v.finding.entry.name == "cudaErrorMemoryAllocation"


def test_none_wait_under_p2p_frames_is_the_capture_rule() -> None:
    frames = "\n".join([
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/workspace/pp.py", line 31, in step',
        "[rank1]:     work = dist.irecv(act, src=0)",
        '[rank1]:   File "/usr/local/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", line 2610, in irecv',
        "[rank1]:     return pg.recv([tensor], group_src, tag)",
        '[rank1]:   File "/workspace/pp.py", line 32, in step',
        "[rank1]:     work.wait()",
    ])
    v = _v(frames + "\n[rank1]: AttributeError: 'NoneType' object has no attribute 'wait'")
    assert (v.rule.id, v.via) == ("dist-p2p-work-none-in-capture", "dist-work-none-wait")
    plain = _v("Traceback (most recent call last):\n  File \"/workspace/a.py\", line 3, in f\n    h.wait()\n"
               "AttributeError: 'NoneType' object has no attribute 'wait'")
    assert plain.rule.id == "dist-work-none-wait" and plain.via is None


def test_internal_assert_hints_decide_graph_relation() -> None:
    cap = _v('RuntimeError: info.status != cudaStreamCaptureStatusInvalidated INTERNAL ASSERT FAILED at '
             '"/pytorch/c10/cuda/CUDACachingAllocator.cpp":2213, please report a bug to PyTorch.')
    assert cap.rule.id == "torch-internal-assert" and cap.graph_related == "yes"
    nvml = _v('RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":1016, '
              "please report a bug to PyTorch.")
    assert nvml.graph_related == "no" and any("NVML" in n for n in nvml.notes)
    # an existing specific assert rule keeps its line
    pool = _v('RuntimeError: it->second->use_count > 0 INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":2103, '
              "please report a bug to PyTorch.")
    assert pool.rule.id == "alloc-graph-pool-assert"


def test_xid_lines_say_what_each_xid_means() -> None:
    v = _v("[171657.328] NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.")
    assert v.rule.id == "nvrm-xid" and v.finding.entry is not None
    assert v.finding.entry.aliases == ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",)
    assert v.graph_related == "no" and "restart the machine" in v.fix_text()
    v31 = _v("NVRM: Xid (PCI:0000:5a:00): 31, pid=2101, name=python, Ch 00000010, intr 00000000. MMU Fault")
    assert v31.finding.entry is not None and v31.finding.entry.messages == ("GPU memory page fault",)
    assert v31.graph_related == "depends"


def test_unknown_nccl_warn_text_gives_no_verdict() -> None:
    d = diagnose_text("node-0:5911:5971 [0] misc/foo.cc:1 NCCL WARN some new message nobody knows yet")
    assert d.verdict is None


def test_communicator_aborted_is_collateral_and_names_the_original_failure() -> None:
    v = _v("torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1.  Original reason for failure was: "
           "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE) ran for 45001 milliseconds")
    # the reason it quotes is the watchdog's own text, which its rule (more specific, same line) explains
    assert v.rule.id == "nccl-watchdog-timeout" and v.confidence == "low"
    v = _v("torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0.  Original reason for failure was: "
           "NCCL error: remote process exited or there was a network error")
    assert v.rule.id == "dist-communicator-aborted" and v.confidence == "low"
    assert any(n.startswith("The original failure: NCCL error: remote process exited") for n in v.notes)


def test_json_verdict_carries_code_phase_and_relation() -> None:
    d = diagnose_text("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    j = d.to_json()["verdict"]
    assert j["status_code"] == {"name": "cudaErrorNoKernelImageForDevice", "number": 209,
                                "message": "no kernel image is available for execution on the device",
                                "meaning": j["status_code"]["meaning"]}
    assert j["phase"] is None and j["graph_related"] == "no"
    assert d.to_json()["findings"][0]["status_code"]["number"] == 209


def test_source_phase_reads_only_what_it_can_parse(tmp_path: Path) -> None:
    from denpex.logs import phase
    from denpex.logs.traceback import Frame

    good = tmp_path / "step.py"
    good.write_text("import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    y = x * 2\nz = 1\n")
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    assert phase.from_source([Frame(str(good), 4, "<module>", "y = x * 2", 1)]) is not None
    assert phase.from_source([Frame(str(good), 5, "<module>", "z = 1", 1)]) is None  # after the block
    assert phase.from_source([Frame(str(broken), 1, "<module>", "", 1)]) is None
    assert phase.from_source([Frame(str(tmp_path / "gone.py"), 4, "f", "", 1)]) is None
    big = tmp_path / "big.py"
    big.write_text("with torch.cuda.graph(g):\n    y = 1\n" + "#" * (phase.MAX_SOURCE_BYTES + 10))
    assert phase.from_source([Frame(str(big), 2, "<module>", "y = 1", 1)]) is None


def test_no_kernel_image_at_capture_is_adjacent_and_says_what_capture_changes() -> None:
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/workspace/serve.py", line 40, in capture',
        "    with torch.cuda.graph(g):",
        '  File "/usr/local/lib/python3.12/site-packages/torch/cuda/graphs.py", line 265, in __exit__',
        "    self.cuda_graph.capture_end()",
        "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device",
    ])
    v = _v(text)
    assert v.rule.id == "cuda-runtime-error" and v.phase is not None and v.phase.phase == "capture"
    assert v.graph_related == "no"  # an architecture mismatch stays one inside a capture
    assert v.notes[0].startswith("Adjacent failure") and any(n.startswith("During capture:") for n in v.notes)
    assert "TORCH_CUDA_ARCH_LIST" in v.fix_text()
