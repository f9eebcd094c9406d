"""Memory stays flat over 10,000 edits to one open document.

The server's resident set size is read from /proc/<pid>/status after a warm-up of edits and again after
10,000 more incremental didChange notifications (typing and deleting a character, inserting and joining
a line, inside and outside the capture region). Each edit leaves the text as it found it every 4 edits,
so growth is what the server keeps, not the document getting bigger.

`python tests/robustness/test_memory.py [EDITS]` runs the same measurement and prints the figures.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.conftest import REPO
from tests.robustness.wire import RawServer

SCENARIO = REPO / "tests" / "lsp" / "workspace" / "gpu" / "scenarios" / "01_item_in_capture.py"
WARM_UP = 2_000
EDITS = 10_000
GROWTH_BOUND_KIB = 8 * 1024  # measured: +14.9 MiB before the pygls future-leak fix, +0.0 MiB after


def _r(l0: int, c0: int, l1: int, c1: int) -> dict[str, Any]:
    return {"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}}


def edit_cycle(i: int) -> list[dict[str, Any]]:
    """Edit number i; four consecutive edits restore the text."""
    line = 8 if (i // 4) % 2 == 0 else 3  # inside step() (reached from the capture) / at module level
    return [
        [{"range": _r(line, 4, line, 4), "text": "z"}],          # type
        [{"range": _r(line, 4, line, 5), "text": ""}],           # delete it again
        [{"range": _r(line, 0, line, 0), "text": "    \n"}],     # split: a new blank line
        [{"range": _r(line, 0, line + 1, 0), "text": ""}],       # join it back
    ][i % 4]


def measure(tmp: Path, edits: int = EDITS, warm_up: int = WARM_UP) -> dict[str, Any]:
    ws = tmp / "ws"
    ws.mkdir()
    shutil.copy(SCENARIO, ws / "scenario.py")
    s = RawServer(tmp / "server.err", cwd=ws)
    try:
        s.initialize((ws).as_uri())
        uri = (ws / "scenario.py").as_uri()
        s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 0,
                                                           "text": SCENARIO.read_text()}})
        assert [d["code"] for d in s.diagnostics(uri, version=0, timeout=60)] == ["DPX101"]
        version = 0

        def burst(n: int) -> float:
            nonlocal version
            t = time.monotonic()
            for _ in range(n):
                version += 1
                s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                    "contentChanges": edit_cycle(version - 1)})
                if version % 500 == 0:  # keep the client reading: the server's output must not back up
                    s.drain(0.0)
            diags = s.diagnostics(uri, version=version, timeout=120)
            assert [d["code"] for d in diags] == ["DPX101"], diags  # the text is back where it started
            s.received.clear()
            return time.monotonic() - t

        warm_s = burst(warm_up)
        before = s.rss_kib()
        edit_s = burst(edits)
        after = s.rss_kib()
        assert s.alive()
        return {"edits": edits, "warm_up": warm_up, "rss_before_kib": before, "rss_after_kib": after,
                "growth_kib": after - before, "warm_up_s": round(warm_s, 1), "edits_s": round(edit_s, 1)}
    finally:
        s.close()


@pytest.mark.slow
def test_memory_flat_over_10000_edits(tmp_path: Path) -> None:
    r = measure(tmp_path)
    print(f"\nRSS after {r['warm_up']} warm-up edits: {r['rss_before_kib'] / 1024:.1f} MiB; after {r['edits']} more: "
          f"{r['rss_after_kib'] / 1024:.1f} MiB (growth {r['growth_kib'] / 1024:+.1f} MiB; {r['edits_s']}s)")
    assert r["growth_kib"] < GROWTH_BOUND_KIB, r


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        print(measure(Path(d), int(sys.argv[1]) if len(sys.argv) > 1 else EDITS))
