"""Findings that may not happen are warnings, with the reason in the message: a line on a branch whose
condition the analyser cannot evaluate (`if cfg.debug:`, an `else:`, an `except:`, a conditional expression),
unless the branch holds the capture too. Errors stay for lines that run whenever the capture does."""

from __future__ import annotations

import pytest

from denpex.source import ScanConfig, analyse_source


def _one(src: str, config: ScanConfig | None = None) -> tuple[str, str, int, str]:
    (f,) = analyse_source(src, "m.py", config=config)
    return f.rule, f.severity, f.start_line, f.message


def _captured(helper_body: str) -> str:
    return ("import torch\n\n\ndef helper(x, debug):\n" + helper_body + "    return x\n\n\n"
            "def main(x, debug):\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n"
            "        y = helper(x, debug)\n    return y\n")


@pytest.mark.parametrize("body,head", [
    ("    if debug:\n        print(x.item())\n", "if debug:"),
    ("    if x.dim() == 2:\n        pass\n    elif debug:\n        print(x.item())\n", "elif debug:"),
    ("    if not debug:\n        pass\n    else:\n        print(x.item())\n", "else:` of `if not debug:"),
    ("    try:\n        pass\n    except ValueError:\n        print(x.item())\n", "except ValueError:"),
    ("    v = x.item() if debug else 0\n", "if debug"),
])
def test_line_on_a_branch_is_a_warning(body: str, head: str) -> None:
    rule, severity, line, message = _one(_captured(body))
    assert (rule, severity) == ("capture-item-sync", "warning")
    assert message.endswith(f"(only if the branch `{head}` runs)")
    assert "item()" in _captured(body).splitlines()[line]


@pytest.mark.parametrize("body", [
    "    print(x.item())\n",
    "    for _ in range(2):\n        print(x.item())\n",
    "    for _ in range(2):\n        pass\n    else:\n        print(x.item())\n",  # a loop's else runs
    "    try:\n        print(x.item())\n    finally:\n        pass\n",
])
def test_line_that_always_runs_is_an_error(body: str) -> None:
    rule, severity, _line, message = _one(_captured(body))
    assert (rule, severity) == ("capture-item-sync", "error") and "only if" not in message


def test_the_condition_itself_always_runs() -> None:
    rule, severity, line, _m = _one(_captured("    if x.sum() > 0:\n        x = x + 1\n"))
    assert (rule, severity, line) == ("capture-implicit-bool", "error", 4)


def test_branch_that_holds_the_capture_does_not_count() -> None:
    src = ("import torch\n\n\ndef main(x, use_graphs):\n    if use_graphs:\n        g = torch.cuda.CUDAGraph()\n"
           "        with torch.cuda.graph(g):\n            if True:\n                pass\n            y = x.item()\n"
           "        return y\n    return x\n")
    assert _one(src)[:3] == ("capture-item-sync", "error", 9)


def test_branch_inside_the_capture_counts() -> None:
    src = ("import torch\n\n\ndef main(x, debug):\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n"
           "        if debug:\n            y = x.item()\n    return g\n")
    assert _one(src)[:3] == ("capture-item-sync", "warning", 7)


def test_configured_severity_still_wins() -> None:
    cfg = ScanConfig(severity={"capture-item-sync": "error"})
    assert _one(_captured("    if debug:\n        print(x.item())\n"), cfg)[1] == "error"


def test_after_the_capture_a_branch_counts_too() -> None:
    src = ("import torch\n\n\ndef main(batch, flag):\n    static_x = torch.zeros(8, device=\"cuda\")\n"
           "    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n        out = static_x * 2\n"
           "    if flag:\n        static_x = batch\n    g.replay()\n    return out\n")
    assert _one(src)[:3] == ("replay-rebound-static-input", "warning", 9)
    plain = src.replace("    if flag:\n        static_x = batch\n", "    static_x = batch\n")
    assert _one(plain)[:3] == ("replay-rebound-static-input", "error", 8)


def _via_call(region_body: str) -> str:
    return ("import torch\n\n\ndef helper(x):\n    return x.item()\n\n\n"
            "def main(x, debug):\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n" + region_body + "    return g\n")


def test_a_branch_at_the_call_site_counts() -> None:
    rule, severity, line, message = _one(_via_call("        if debug:\n            y = helper(x)\n"))
    assert (rule, severity, line) == ("capture-item-sync", "warning", 4)
    assert message.endswith("(only if the branch `if debug:` runs)")


def test_a_callee_reached_both_ways_is_certain() -> None:
    for body in ("        if debug:\n            y = helper(x)\n        z = helper(x)\n",
                 "        z = helper(x)\n        if debug:\n            y = helper(x)\n"):
        assert _one(_via_call(body))[:3] == ("capture-item-sync", "error", 4)


def test_a_branch_deeper_in_the_call_path_counts() -> None:
    src = ("import torch\n\n\ndef leaf(x):\n    return x.item()\n\n\ndef mid(x, debug):\n    if debug:\n"
           "        return leaf(x)\n    return x\n\n\ndef main(x, debug):\n    g = torch.cuda.CUDAGraph()\n"
           "    with torch.cuda.graph(g):\n        y = mid(x, debug)\n    return g\n")
    rule, severity, line, message = _one(src)
    assert (rule, severity, line) == ("capture-item-sync", "warning", 4) and "`if debug:`" in message
