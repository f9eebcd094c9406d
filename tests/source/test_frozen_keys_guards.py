"""Issue 21: an output written under its input key and refreshed in place by the host
(replay-output-under-input-key, DPX315), and capture-guard branches that change device work
(replay-capturing-branch, DPX316), with the legal near misses that must stay clean: the host-only guard (logging,
`.item()` for metrics, `print`, counters), two implementations of one step, a refresh of the captured input
tensor, an output under another key. Lines are found by a marker comment."""

from __future__ import annotations

import textwrap

from denpex.source import analyse_source


def _lines(text: str, rule: str) -> list[tuple[int, str]]:
    found = analyse_source(textwrap.dedent(text), "case.py")
    return sorted((f.start_line, f.severity) for f in found if f.rule == rule)


def _messages(text: str, rule: str) -> list[str]:
    return [f.message for f in analyse_source(textwrap.dedent(text), "case.py") if f.rule == rule]


def _line(text: str, marker: str) -> int:
    rows = [i for i, ln in enumerate(textwrap.dedent(text).splitlines()) if marker in ln]
    assert len(rows) == 1, (marker, rows)
    return rows[0]


KEYED = """
    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, td):
            td["h"] = self.lin(td["h"])  # WRITE
            td["score"] = self.lin(td["h"]).sum(-1)  # OTHERKEY
            return td

    def serve(batches):
        block = Block().cuda()
        static = {"h": torch.zeros(4, 16, device="cuda")}
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = block(static)
        for b in batches:
            static{REFRESH}.copy_(b)  # REFRESH
            g.replay()
            yield out["h"].clone()
"""


def test_output_under_its_input_key_refreshed_in_place_is_an_error_naming_the_refresh() -> None:
    text = KEYED.replace("{REFRESH}", '["h"]')
    assert _lines(text, "replay-output-under-input-key") == [(_line(text, "# WRITE"), "error")]
    msg = _messages(text, "replay-output-under-input-key")[0]
    assert f"case.py:{_line(text, '# REFRESH') + 1}" in msg


def test_refreshing_another_key_or_the_captured_input_stays_clean() -> None:
    assert _lines(KEYED.replace("{REFRESH}", '["mask"]'), "replay-output-under-input-key") == []
    text = KEYED.replace('static = {"h": torch.zeros(4, 16, device="cuda")}',
                         'static_h = torch.zeros(4, 16, device="cuda")\n        static = {"h": static_h}')
    text = text.replace("static{REFRESH}.copy_(b)", "static_h.copy_(b)")
    assert _lines(text, "replay-output-under-input-key") == []


def test_a_direct_write_in_the_capture_region_is_found_too() -> None:
    text = """
        import torch

        lin = torch.nn.Linear(8, 8).cuda()
        feats = {"x": torch.zeros(2, 8, device="cuda")}
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            feats["x"] = lin(feats["x"])  # WRITE
        for step in range(3):
            feats["x"][:] = torch.randn(2, 8, device="cuda")
            g.replay()
    """
    assert _lines(text, "replay-output-under-input-key") == [(_line(text, "# WRITE"), "error")]


GUARDED = """
    import logging

    import torch

    log = logging.getLogger(__name__)

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)
            self.register_buffer("ema", torch.zeros(16))
            self.norms = []
            self.steps = 0

        def forward(self, x):
            h = self.lin(x)
            if not torch.cuda.is_current_stream_capturing():
                log.info("mean %.4f", h.mean().item())
                self.norms.append(h.norm().item())
                self.steps += 1
                print(h.sum())
                peak = h.abs().max()
                log.debug("peak %s", peak)
            {DEVICE}
            return h * 2

    head = Head().cuda()
    static_x = torch.randn(4, 16, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_y = head(static_x)
    g.replay()
"""


def test_the_legal_host_only_guard_stays_clean() -> None:
    assert _lines(GUARDED.replace("{DEVICE}", "pass"), "replay-capturing-branch") == []


def test_device_work_on_one_side_of_the_guard_is_an_error_on_its_line() -> None:
    device = ("if not torch.cuda.is_current_stream_capturing():  # DEVICE\n"
              "                h = h + self.ema  # CHANGE")
    text = GUARDED.replace("{DEVICE}", device)
    assert _lines(text, "replay-capturing-branch") == [(_line(text, "# DEVICE"), "error")]
    msg = _messages(text, "replay-capturing-branch")[0]
    assert "only when not capturing" in msg and f"case.py:{_line(text, '# CHANGE') + 1}" in msg


def test_work_only_while_capturing_and_in_place_changes_are_found() -> None:
    device = ("if torch.cuda.is_current_stream_capturing():  # DEVICE\n"
              "                h.mul_(0.5)  # CHANGE")
    text = GUARDED.replace("{DEVICE}", device)
    assert _lines(text, "replay-capturing-branch") == [(_line(text, "# DEVICE"), "error")]


def test_module_state_updated_in_place_on_one_side_is_a_warning() -> None:
    device = ("if not torch.cuda.is_current_stream_capturing():  # DEVICE\n"
              "                self.ema.mul_(0.9)  # CHANGE")
    text = GUARDED.replace("{DEVICE}", device)
    assert _lines(text, "replay-capturing-branch") == [(_line(text, "# DEVICE"), "warning")]


def test_two_implementations_of_one_step_stay_clean() -> None:
    device = ("if torch.cuda.is_current_stream_capturing():\n"
              "                h = torch.relu(h)\n"
              "            else:\n"
              "                h = h.clamp(min=0)")
    assert _lines(GUARDED.replace("{DEVICE}", device), "replay-capturing-branch") == []


def test_a_value_changed_under_the_guard_and_never_read_after_stays_clean() -> None:
    device = ("if not torch.cuda.is_current_stream_capturing():\n"
              "                dbg = self.lin(h)\n"
              "                dbg = dbg.softmax(-1)\n"
              "                log.info('%s', dbg.argmax().item())")
    assert _lines(GUARDED.replace("{DEVICE}", device), "replay-capturing-branch") == []
