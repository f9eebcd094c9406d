"""Writing denpex.startcode's shipped files: the language server's early start-up run once, at build time.

    python -m denpex.startcode_build OUT_DIR [--snapshot PATH]     # hatch_build.py runs this

The early path (lsp/boot.py: `initialize`, then the first diagnostics of a small document) runs in this
process with denpex.startcode installed on an empty per-user cache, so every dataclass text and re
pattern it meets is compiled here; the ones it used are written to OUT_DIR for this Python build. A
first start after an install then compiles none of them. `--snapshot` names the rule-book snapshot the
build made (denpex/_snapshot.pickle of the wheel), so that the path run is the one an install runs.
Needs the runtime dependencies the early path imports (tree-sitter, tree-sitter-python); without them
it fails with one line and the package is built without the files (starts are as before).
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from pathlib import Path

# a capture that calls a function reading a tensor's value: the rules a small file's start runs
DOCUMENT = """import torch


def scale_of(t):
    m = t.abs().max()
    return m.item()


x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * scale_of(x)
g.replay()
"""

# what VS Code-like push clients send (a client kind denpex.lsp.shipped answers early)
CAPABILITIES = {"textDocument": {"publishDiagnostics": {"relatedInformation": True}},
                "window": {"workDoneProgress": True}}


def _frame(body: dict[str, object]) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def session(folder: Path, doc: Path) -> bytes:
    """initialize, initialized and the didOpen of `doc`, framed as a client sends them."""
    return b"".join([
        _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": folder.as_uri(),
            "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}], "capabilities": CAPABILITIES}}),
        _frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        _frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": doc.as_uri(), "languageId": "python", "version": 1, "text": DOCUMENT}}}),
    ])


def build(out_dir: Path, snapshot: Path | None = None) -> list[Path]:
    """Run the early path here and write the shipped files to out_dir; RuntimeError if it published nothing."""
    with tempfile.TemporaryDirectory(prefix="denpex-startcode-") as tmp:
        # the early path's own caches (initialize answers, the rule book) go to a throw-away folder
        os.environ["DENPEX_CACHE_DIR"] = str(Path(tmp) / "cache")
        from denpex import startcode

        startcode.install(shipped=False)  # not from an older shipped copy: everything compiled here
        if snapshot is not None:
            from denpex import snapshot as snap

            snap.SNAPSHOT = snapshot
        from denpex.lsp import boot, shipped
        from denpex.lsp.stdio import BoundedStdin

        known = shipped.answer

        def answer(params: dict[str, object]) -> dict[str, object] | None:
            # a build env whose pygls/lsprotocol are not the table's versions: the path on from the answer
            return known(params) or {"capabilities": {"positionEncoding": "utf-16"}}

        shipped.answer = answer  # type: ignore[assignment]

        folder = Path(tmp) / "project"
        folder.mkdir()
        doc = folder / "train.py"
        doc.write_text(DOCUMENT, encoding="utf-8")
        out = io.BytesIO()
        boot.Early(boot.Frames(BoundedStdin(io.BytesIO(session(folder, doc)))), boot.Out(out)).run()
        if b'"textDocument/publishDiagnostics"' not in out.getvalue():
            raise RuntimeError("the early start-up published no diagnostics")
        out_dir.mkdir(parents=True, exist_ok=True)  # other builds' files stay: each reads its own
        return startcode.write_shipped(out_dir)


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    snapshot = Path(argv[argv.index("--snapshot") + 1]) if "--snapshot" in argv else None
    for p in build(Path(argv[0]), snapshot):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
