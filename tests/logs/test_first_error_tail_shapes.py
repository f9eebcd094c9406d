"""Two shapes of the first-error pass from issue 22's held-out misses, each as its real source writes it.

* ``Failed:`` opens a C/C++ check macro's report only with the failing source position after it (vLLM's and
  the NCCL examples' CUDACHECK: ``Failed: Cuda error <file>:<line> '<message>'``). A status word alone is no
  error line: a job script's ``echo FAILED: done at $(date)`` (desihub/desispec#2744) or ninja's failed
  build step ``FAILED: obj.o``, after which the compiler says what failed.
* TGI's launcher logs with tracing's compact format, which writes the span's fields after the message: a
  shard's traceback forwarded as one record ends with a newline, so its ``rank=N`` stands alone on the
  line after the record's last line. The first error of that record takes the rank; a rank line after a
  new record's timestamp belongs to that record.
"""

from __future__ import annotations

from typing import Any

import pytest

from denpex.logs.diagnose import diagnose_text
from denpex.logs.first_error import classify, message_of


@pytest.mark.parametrize("text", [
    "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'",
    "Failed: Cuda error ./ripserplusplus/ripser++.cu:2371 'invalid device function'",
    "Failed: /home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:310 'invalid argument'",
    "FAILED: kernels.cu:12 launch returned 700",
])
def test_failed_with_a_source_position_is_an_assertion(text: str) -> None:
    assert classify(message_of(text)) == ("assertion", True)


@pytest.mark.parametrize("text", [
    "FAILED: done at Wed Apr 29 04:36:42 PM PDT 2026",
    "FAILED: inplace_abn_cuda.cuda.o ",
    "FAILED: /home/u/detectron2/build/temp.linux-x86_64-3.7/deform_conv_cuda_kernel.o",
    "Failed: 0 of 12 steps",
])
def test_failed_as_a_status_word_is_no_error_line(text: str) -> None:
    assert classify(message_of(text)) is None


def test_the_job_scripts_failed_echo_is_not_the_first_error() -> None:
    text = ("[2026-04-29T23:36:37.809] error: *** STEP 52222788.0 ON nid002888 CANCELLED AT 2026-04-29T23:36:37 "
            "DUE TO TASK FAILURE ***\n"
            "srun: error: nid002888: tasks 0-57,59-63: Terminated\n"
            "FAILED: done at Wed Apr 29 04:36:42 PM PDT 2026\n")
    fe = diagnose_text(text).to_json()["first_error"]
    assert fe is None or not fe["found"]


_SHARD = [
    '  File "/opt/conda/lib/python3.9/site-packages/text_generation_server/models/__init__.py", line 240, in get_model',
    '    raise NotImplementedError("sharded is not supported for this model")',
    "NotImplementedError: sharded is not supported for this model",
]


def _first_error(lines: list[str]) -> dict[str, Any]:
    fe: dict[str, Any] = diagnose_text("\n".join(lines) + "\n").to_json()["first_error"]
    assert fe["found"] and fe["line"] == 3, fe
    return fe


def test_the_trailing_rank_line_gives_the_records_rank() -> None:
    fe = _first_error([*_SHARD, " rank=1",
                       "2023-07-09T15:25:26.839306Z ERROR text_generation_launcher: Shard 1 failed to start"])
    assert fe["rank"] == 1 and any("trailing rank=1" in e for e in fe["attribution"])


def test_the_rank_line_may_come_after_more_lines_of_the_same_record() -> None:
    fe = _first_error([*_SHARD, "", "(the shard's last words)", " rank=3"])
    assert fe["rank"] == 3


def test_a_rank_line_after_a_new_record_belongs_to_that_record() -> None:
    fe = _first_error([*_SHARD,
                       "2023-07-09T15:25:26.839306Z  WARN shard-manager: text_generation_launcher: "
                       "We're not using custom kernels.", " rank=1"])
    assert fe["rank"] is None


def test_a_rank_word_inside_a_line_is_no_trailing_field() -> None:
    fe = _first_error([*_SHARD, "world size 2, this rank=1 of them"])
    assert fe["rank"] is None
