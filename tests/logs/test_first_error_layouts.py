"""Python logging's own record layouts reach the first-error pass: the logger's name between ' - '
separators before the level (`%(asctime)s - %(name)s - %(levelname)s - %(message)s`) and a fixed-width level
(`%(levelname)-8s`), whose padding is no indentation (indented lines are frames and details, never errors)."""

from __future__ import annotations

from denpex.logs.diagnose import diagnose_text
from denpex.logs.first_error import message_of


def test_the_logger_name_before_a_dashed_level_is_peeled() -> None:
    line = message_of("2026-12-02 01:11:45,537 - eval.ppl - ERROR - MISMATCH graph vs eager")
    assert (line.level, line.message) == ("error", "MISMATCH graph vs eager")


def test_a_padded_level_is_not_indentation() -> None:
    line = message_of("2026-12-02 01:11:51,025 ERROR    export MISMATCH exported embeddings")
    assert (line.level, line.message, line.indent) == ("error", "export MISMATCH exported embeddings", 0)


def test_words_before_a_dash_that_is_no_level_stay_in_the_message() -> None:
    assert message_of("Epoch 3 - loss 0.2").message == "Epoch 3 - loss 0.2"


def test_a_frame_after_a_prefix_is_still_indented() -> None:
    assert message_of('[rank0]:   File "/w/a.py", line 3, in f').indent >= 2


def test_both_layouts_give_a_first_error_answer() -> None:
    text = ("2026-12-02 01:11:40,001 - eval.ppl - INFO - step 10 ppl 12.3\n"
            "2026-12-02 01:11:45,537 - eval.ppl - ERROR - MISMATCH graph vs eager perplexity\n")
    d = diagnose_text(text).to_json()
    assert d["verdict"] is None and d["first_error"]["line"] == 2
    text = ("2026-12-02 01:11:50,001 INFO     export step 10\n"
            "2026-12-02 01:11:51,025 ERROR    export MISMATCH exported embeddings vs eager\n")
    d = diagnose_text(text).to_json()
    assert d["verdict"] is None and d["first_error"]["line"] == 2
