"""Making denpex.lsp.shipped's table: pygls' answer to `initialize`, from the real server run in-process,
for every combination of the client values that answer depends on.

    python -m denpex.lsp.shipped_build --write    # after a change to the server's capabilities
    python -m denpex.lsp.shipped_build            # exit 1 when the shipped table is stale
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from denpex.lsp.shipped import ANSWERS, ENCODINGS, Json, key, stamp

if TYPE_CHECKING:
    from cattrs import Converter

_SAVE = (None, False, True)

_converter: Converter | None = None


def pygls_answer(params: Json) -> Json:
    """What the real server (denpex.lsp.app.create_server) answers to `initialize` with these params,
    run in-process: its JSON-RPC message (a result or an error). One converter serves every server
    made here (cattrs builds its hooks once per converter; pygls makes a new one per server)."""
    global _converter
    from denpex.lsp.app import create_server

    ls = create_server()
    if _converter is None:
        _converter = ls.protocol._converter
    else:
        ls.protocol._converter = _converter
    sent: list[bytes] = []

    class Writer:
        def write(self, data: bytes) -> None:
            sent.append(data)

        def close(self) -> None:
            pass

    ls.protocol.set_writer(Writer(), include_headers=False)
    msg = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    try:
        ls.protocol.handle_message(ls.protocol.structure_message(msg))
    except Exception as exc:  # pygls refuses params it cannot read
        return {"error": repr(exc)}
    replies = [json.loads(d) for d in sent]
    answers = [r for r in replies if r.get("id") == 1 and "method" not in r]
    assert len(answers) == 1, replies
    out: Json = answers[0]
    return out


def payload(encoding: str, notebook: bool, pull: bool, will_save: bool | None, will_save_wait: bool | None) -> Json:
    """The smallest client capabilities with these values."""
    caps: dict[str, Any] = {"general": {"positionEncodings": [encoding]}}
    text: dict[str, Any] = {}
    if pull:
        text["diagnostic"] = {}
    sync = {k: v for k, v in (("willSave", will_save), ("willSaveWaitUntil", will_save_wait)) if v is not None}
    if sync:
        text["synchronization"] = sync
    if text:
        caps["textDocument"] = text
    if notebook:
        caps["notebookDocument"] = {"synchronization": {}}
    return caps


def generate() -> Json:
    results: list[object] = []
    answers: dict[str, int] = {}
    for enc in ENCODINGS:
        for notebook in (False, True):
            for pull in (False, True):
                for ws in _SAVE:
                    for wsw in _SAVE:
                        caps = payload(enc, notebook, pull, ws, wsw)
                        reply = pygls_answer({"processId": None, "rootUri": None, "capabilities": caps})
                        result = reply.get("result")
                        if not isinstance(result, dict):
                            raise RuntimeError(f"pygls did not answer {caps}: {reply}")
                        if result not in results:
                            results.append(result)
                        answers[key(enc, notebook, pull, ws, wsw)] = results.index(result)
    return {"stamp": stamp(), "answers": answers, "results": results}


def main(argv: list[str]) -> int:
    """`--write`: remake the table; `--check`: exit 1 when the shipped table is not this code's."""
    fresh = generate()
    text = json.dumps(fresh, indent=1, sort_keys=True) + "\n"
    if "--write" in argv:
        ANSWERS.write_text(text, encoding="utf-8")
        print(f"{ANSWERS}: {len(fresh['answers'])} client kinds, {len(fresh['results'])} answers")  # type: ignore[arg-type]
        return 0
    try:
        same = json.loads(ANSWERS.read_text(encoding="utf-8")) == fresh
    except (OSError, ValueError):
        same = False
    print("up to date" if same else "stale: run python -m denpex.lsp.shipped_build --write")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
