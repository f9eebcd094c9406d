"""Which phase of a CUDA-graph workload a failure happened in: capture, replay, or unknown.

Evidence, strongest first: the frames of the failing traceback (capture_begin / capture_end /
graph.__exit__ / make_graphed_callables, CUDAGraph.replay, the frameworks' capture functions), then
the last phase line a framework printed before the failure (vLLM's "Capturing CUDA graphs", SGLang's
"Capture cuda graph begin", each closed by its "finished"/"end" line).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from denpex.logs.traceback import Frame

Phase = str  # "capture" | "replay"

# (path regex, function regex, phase): the frames that put a traceback inside a phase
_FRAME_PHASES: tuple[tuple[re.Pattern[str], re.Pattern[str], Phase], ...] = (
    (re.compile(r"torch/cuda/graphs\.py$"), re.compile(r"^(?:capture_begin|capture_end|__enter__|__exit__)$"), "capture"),
    (re.compile(r"torch/cuda/graphs\.py$"), re.compile(r"^make_graphed_callables$"), "capture"),
    (re.compile(r"torch/cuda/graphs\.py$"), re.compile(r"^replay$"), "replay"),
    (re.compile(r"torch/_inductor/cudagraph_trees\.py$"), re.compile(r"^(?:_record|record_function)$"), "capture"),
    (re.compile(r"torch/_inductor/cudagraph_trees\.py$"), re.compile(r"^(?:run_graph|_run|run_first_inputs)$"), "replay"),
    (re.compile(r"/vllm/"), re.compile(r"^(?:capture_model|_capture_cudagraphs|capture)$"), "capture"),
    (re.compile(r"/sglang/"), re.compile(r"^(?:capture|capture_one_batch_size|_capture_graph)$"), "capture"),
    (re.compile(r"/sglang/"), re.compile(r"^replay$"), "replay"),
)

# framework lines: (literal, phase it opens or None when it closes one)
PHASE_LINES: tuple[tuple[str, Phase | None], ...] = (
    ("Capturing CUDA graphs", "capture"),  # vLLM V1: tqdm bar "Capturing CUDA graphs (decode, FULL): 100%|..."
    ("Capturing cudagraphs for decoding", "capture"),  # vLLM V0 worker/model_runner.py
    ("Capturing the model for CUDA graphs", "capture"),  # vLLM V0 log_cudagraph_warning
    ("Graph capturing finished in", None),  # vLLM gpu_model_runner.py / model_runner.py
    ("Capture cuda graph begin", "capture"),  # SGLang model_runner.py init_cuda_graphs
    ("Capture cuda graph end", None),  # SGLang
)


@dataclass(frozen=True)
class PhaseEvidence:
    phase: Phase
    evidence: str  # what said so, for the verdict
    line: int | None = None  # log line of a framework phase line


def from_frames(frames: list[Frame]) -> PhaseEvidence | None:
    for fr in reversed(frames):  # innermost first: a replay inside a capture is a capture
        path = fr.path.replace("\\", "/")
        for path_re, func_re, phase in _FRAME_PHASES:
            if func_re.search(fr.function) and path_re.search(path):
                return PhaseEvidence(phase, f"frame {fr.function} in {path.rsplit('/', 1)[-1]}", fr.log_line)
    return None


def frame_phase(function: str) -> Phase | None:
    """The phase a frame of torch/cuda/graphs.py or cudagraph_trees.py with this function name is in."""
    if function in ("capture_begin", "capture_end", "__enter__", "__exit__", "make_graphed_callables", "_record",
                    "record_function"):
        return "capture"
    if function in ("replay", "run_graph", "_run", "run_first_inputs"):
        return "replay"
    return None


def phase_line(text: str) -> tuple[str, Phase | None] | None:
    for literal, phase in PHASE_LINES:
        if literal in text:
            return literal, phase
    return None


def from_lines(markers: list[tuple[int, str, Phase | None]], before: int) -> PhaseEvidence | None:
    """The phase the last framework phase line before `before` left open (markers in log order)."""
    last: tuple[int, str, Phase | None] | None = None
    for m in markers:
        if m[0] > before:
            break
        last = m
    if last is None or last[2] is None:
        return None
    return PhaseEvidence(last[2], f"after the framework's '{last[1]}' line (line {last[0]})", last[0])


MAX_SOURCE_BYTES = 2 << 20  # a frame's file larger than this is not read


@lru_cache(maxsize=64)
def _capture_blocks(path: str, mtime_ns: int) -> tuple[tuple[int, int, int], ...]:
    """(with-line, first body line, last body line) of each `with ...graph(...)` block in a Python file.

    The file is parsed, never run."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_SOURCE_BYTES + 1)
        if len(data) > MAX_SOURCE_BYTES:
            return ()
        tree = ast.parse(data, filename=path)
    except (OSError, SyntaxError, ValueError, RecursionError):
        return ()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.With, ast.AsyncWith)) or not node.body:
            continue
        for item in node.items:
            call = item.context_expr
            func = call.func if isinstance(call, ast.Call) else None
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "graph":  # torch.cuda.graph(g), cuda.graph(g, pool=...), graph(g)
                out.append((node.lineno, node.body[0].lineno, node.end_lineno or node.body[-1].lineno))
                break
    return tuple(out)


def from_source(frames: list[Frame]) -> PhaseEvidence | None:
    """The failing line of a user frame lies inside a `with torch.cuda.graph(...)` block of its file, when
    that file is on this machine (diagnosing where the job ran)."""
    for fr in reversed(frames):
        if fr.is_library or not fr.path.endswith(".py"):
            continue
        try:
            st = os.stat(fr.path)
        except (OSError, ValueError):
            continue
        for with_line, first, last in _capture_blocks(fr.path, st.st_mtime_ns):
            if first <= fr.line <= last:
                name = fr.path.replace("\\", "/").rsplit("/", 1)[-1]
                return PhaseEvidence("capture", f"line {fr.line} of {name} is inside the `with ...graph(...)` block "
                                     f"at line {with_line}", None)
    return None
