"""Incremental equals fresh, with a real project as the language server's workspace.

    python bench/check_incremental_workspace.py [--root /tmp/denpex-eco/Megatron-LM] [--file REL:ANCHOR ...]
                                                [--edits 10] [--seed 7]

The server's index (lsp.analysis.Analyzer: IndexedWorkspace over the root) holds every Python file of the tree;
each named file then receives a seeded series of random single-line edits as didChange sends them (a space
typed or deleted, a line inserted or deleted, on the anchor line, near it, or anywhere in the file), and after
each edit the server's incremental analysis must equal a fresh `Document` analysed against the same workspace.
Exit status 1 on a mismatch. The tree is read, never written.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from denpex.lsp.analysis import Analyzer
from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import Document
from denpex.source.model import TextEdit

DEFAULT_FILES = {
    "Megatron-LM": [
        "megatron/core/transformer/moe/moe_utils.py:permuted_probs = probs.T.contiguous().masked_select(",
        "megatron/core/transformer/transformer_layer.py:pp_rank = parallel_state.get_pipeline_model_parallel_rank()",
    ],
    "NeMo": ["nemo/collections/asr/parts/utils/batched_beam_decoding_utils.py:self._max_length *= 2"],
}
LINES = ["x = 1", "y = t.item()", "pass", "z = float(t.sum())", "if t.sum() > 0:", "return t"]


def random_edit(rng: random.Random, lines: list[str], anchor: int) -> TextEdit:
    near = rng.random() < 0.7
    line = max(0, min(len(lines) - 1, anchor + rng.randint(-3, 3))) if near else rng.randrange(len(lines))
    indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
    kind = rng.choice(["type", "type", "delete-char", "insert-line", "delete-line"])
    col = len(lines[line])
    if kind == "type":
        return TextEdit(line, col, line, col, " ")
    if kind == "delete-char" and col > 0:
        return TextEdit(line, col - 1, line, col, "")
    if kind == "insert-line":
        return TextEdit(line, 0, line, 0, indent + rng.choice(LINES) + "\n")
    if line + 1 < len(lines):
        return TextEdit(line, 0, line + 1, 0, "")
    return TextEdit(line, col, line, col, " ")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=Path("/tmp/denpex-eco/Megatron-LM"))
    ap.add_argument("--file", action="append", help="REL:ANCHOR, a file of the root and the text of a line in it")
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    root = args.root.resolve()
    specs = args.file or DEFAULT_FILES.get(root.name, [])
    analyzer = Analyzer(lambda m: print(m, file=sys.stderr))
    analyzer.set_folders([str(root)])
    t0 = time.perf_counter()
    files = analyzer.workspace_files()
    for p in files:
        analyzer.index_file(p)
    print(f"{root}: {len(files)} files indexed in {time.perf_counter() - t0:.1f} s")
    ws = analyzer._workspace
    assert ws is not None
    cfg = ScanConfig()
    rng = random.Random(args.seed)
    mismatches = checks = reused = 0
    for spec in specs:
        rel, _, anchor_text = spec.partition(":")
        path = str(root / rel)
        text = Path(path).read_text(encoding="utf-8")
        analyzer.update_file(path, text)
        analyzer.analyse(text, path, cfg)
        anchor = next(i for i, s in enumerate(text.splitlines()) if anchor_text in s)
        for k in range(args.edits):
            lines = (ws.text(path) or "").splitlines()
            e = random_edit(rng, lines, anchor)
            analyzer.edit_file(path, [e])
            text = ws.text(path) or ""
            t1 = time.perf_counter()
            inc = analyzer.analyse(text, path, cfg)
            t2 = time.perf_counter()
            fresh = [f for f in Document(path, text).analyse(cfg, ws) if f.path == path]
            checks += 1
            if inc != fresh:
                mismatches += 1
                print(f"MISMATCH {rel} edit {k} {e}: incremental {len(inc)} findings, fresh {len(fresh)}")
                for f in inc:
                    print("  inc  ", f.start_line, f.rule, f.message[:80])
                for f in fresh:
                    print("  fresh", f.start_line, f.rule, f.message[:80])
            else:
                reused += 1
            if e.new_text.endswith("\n") or e.end_line > e.start_line:
                anchor += (1 if e.new_text.endswith("\n") else -1) if e.start_line < anchor else 0
            print(f"  {rel} edit {k}: {len(inc)} findings, incremental {1000 * (t2 - t1):.0f} ms", flush=True)
    print(f"{checks} checks, {mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
