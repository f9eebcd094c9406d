"""The shortcuts taken for speed (issue 12, section 6) give the answers of the plain versions.

Each fast path is checked against the code it stands in for, on the built-in rule book's own
anchors and on generated inputs, so a change to either side that makes them differ fails here.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from denpex.logs import frameworks
from denpex.logs.diagnose import matcher_for
from denpex.logs.matcher import cover_keys, detect_frameworks


def _cover_keys_plain(anchors: tuple[bytes, ...], min_len: int) -> tuple[bytes, ...]:
    """The greedy cover as first written: every round recounts every uncovered anchor's keys."""
    plain = set(b"abcdefghijklmnopqrstuvwxyz ")
    subs: dict[bytes, set[bytes]] = {}
    for a in set(anchors):
        n = min(min_len, len(a))
        every = {a[i : i + n] for i in range(len(a) - n + 1)}
        subs[a] = {k for k in every if k[:1] != b" " and k[-1:] != b" "} or every
    uncovered = set(subs)
    keys: list[bytes] = []
    while uncovered:
        count: Counter[bytes] = Counter()
        for a in uncovered:
            count.update(subs[a])
        best = min(count, key=lambda k: (-count[k], set(k) <= plain, -len(k), k))
        keys.append(best)
        uncovered = {a for a in uncovered if best not in a}
    return tuple(sorted(keys))


def test_cover_keys_of_the_rule_book_equal_the_plain_greedy_cover() -> None:
    anchors = tuple(a.encode("utf-8") for a in matcher_for(None).anchors)
    assert len(anchors) > 64  # the two-stage prefilter is in use
    for min_len in (6, 8):
        got = cover_keys.__wrapped__(anchors, min_len)  # type: ignore[attr-defined]
        assert got == _cover_keys_plain(anchors, min_len)
        assert all(any(k in a for k in got) for a in anchors)


@pytest.mark.parametrize("seed", range(40))
def test_cover_keys_equal_the_plain_greedy_cover_on_random_anchors(seed: int) -> None:
    rnd = random.Random(seed)
    alphabet = b"ab c" if seed % 2 else b"abcdefgh XYZ_"
    anchors = tuple(bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 24)))
                    for _ in range(rnd.randint(1, 60)))
    min_len = rnd.randint(1, 8)
    assert cover_keys.__wrapped__(anchors, min_len) == _cover_keys_plain(anchors, min_len)  # type: ignore[attr-defined]


_MARKERS = [m for fw in frameworks.FRAMEWORKS for m in fw.markers]


@pytest.mark.parametrize("seed", range(60))
def test_detect_frameworks_equals_frameworks_detect(seed: int) -> None:
    rnd = random.Random(seed)
    filler = ["Traceback (most recent call last):", 'File "/usr/lib/python3/x.py", line 3, in f',
              "\ufffd bad byte", "\ud800 lone surrogate", "", "vll", "m.", "Megatro", "n", "torch/_induct"]
    texts = []
    for _ in range(rnd.randint(0, 6)):
        parts = [rnd.choice(filler) for _ in range(rnd.randint(0, 5))]
        if rnd.random() < 0.3:
            parts.insert(rnd.randint(0, len(parts)), rnd.choice(_MARKERS))
        texts.append(rnd.choice(["", " ", "\n"]).join(parts))
    assert [f.name for f in detect_frameworks(texts)] == [f.name for f in frameworks.detect(texts)]
    # the file's head, raw: invalid UTF-8 and markers in it (or cut by a bad byte) as the decode sees them
    bits = [b"\xff", b"\xe2\x9c", b"\xc3\xa9", b"ok ", b"\n", *(m.encode() for m in _MARKERS),
            *(m.encode()[:3] + b"\x80" + m.encode()[3:] for m in _MARKERS)]
    head = b"".join(rnd.choice(bits) for _ in range(rnd.randint(0, 12)))
    want = frameworks.detect([head.decode("utf-8", errors="replace"), *texts])
    assert [f.name for f in detect_frameworks(texts, head)] == [f.name for f in want]


def test_detect_frameworks_finds_each_marker_alone_and_none_split_across_texts() -> None:
    for fw in frameworks.FRAMEWORKS:
        for marker in fw.markers:
            assert fw in detect_frameworks(["head", f"x {marker} y"])
            # a marker cut in two across texts is in no text: neither version finds it
            cut = [marker[: len(marker) // 2], marker[len(marker) // 2 :]]
            assert detect_frameworks(cut) == frameworks.detect(cut)
    assert detect_frameworks([]) == [] == frameworks.detect([])


def _random_json(rnd: random.Random, depth: int) -> object:
    leaves: list[object] = [None, True, False, 0, -7, 2**70, 1.5, -0.0, 1e300, float("nan"), "",
                            "plain", 'quote " back \\ slash', "tab\tnl\n\x00\x1f", "é ✓ 日本", "\ud800", "\U0001f600"]
    if depth <= 0 or rnd.random() < 0.3:
        return rnd.choice(leaves)
    if rnd.random() < 0.5:
        items = [_random_json(rnd, depth - 1) for _ in range(rnd.randint(0, 4))]
        return tuple(items) if rnd.random() < 0.2 else items
    keys: list[object] = ["a", "", "ключ", 3, True, None, 2.5, "\n"]
    return {rnd.choice(keys): _random_json(rnd, depth - 1) for _ in range(rnd.randint(0, 4))}


@pytest.mark.parametrize("seed", range(80))
def test_dumps_indented_is_the_text_of_json_dumps(seed: int) -> None:
    from denpex.logs.json_text import dumps_indented

    doc = _random_json(random.Random(seed), 5)
    assert dumps_indented(doc) == json.dumps(doc, indent=2, ensure_ascii=False)


def test_dumps_indented_raises_what_json_dumps_raises() -> None:
    from denpex.logs.json_text import dumps_indented

    with pytest.raises(TypeError):
        dumps_indented({"a": [object()]})
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError):
        dumps_indented(loop)


@pytest.mark.parametrize("seed", range(30))
def test_vector_newline_count_equals_bytes_count(seed: int) -> None:
    from denpex.logs import bytecount

    if bytecount.ENGINE == "scalar":
        pytest.skip("no stringzilla wheel here: the scalar count is the only one")
    rnd = random.Random(seed)
    n = rnd.choice([0, 1, 31, 32, 33, 4095, 70_000])
    data = bytes(rnd.choice(b"ab\n\r\x00\xff") for _ in range(n))
    for buf in (data, bytearray(data)):
        for _ in range(20):
            start = rnd.randint(0, n + 2)
            end = rnd.randint(0, n + 2)
            assert bytecount.count_newlines(buf, start, end) == buf.count(b"\n", start, end)


def test_pooled_read_buffers_keep_each_scan_exact(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Scans share two pooled buffers: a scan after another, one left unfinished, or two at once
    each see only their own bytes (the lines, numbers and contexts of a fresh scan)."""
    import io

    from denpex.logs import scanner

    monkeypatch.setattr(scanner, "CHUNK", 64)
    monkeypatch.setattr(scanner._Reader, "_free", [])
    matcher = matcher_for(None)

    def log(tag: str, n: int) -> bytes:
        lines = [f"{tag} step {i}" for i in range(n)]
        lines[n // 2] = f"{tag} RuntimeError: CUDA error: operation not permitted when stream is capturing"
        return ("\n".join(lines) + "\n").encode()

    def scan(data: bytes, stop: int | None = None) -> list[tuple[int, str]]:
        out = []
        for lh in scanner.iter_line_hits(io.BytesIO(data), matcher, scanner.ScanStats()):
            out.append((lh.line, lh.text))
            if stop is not None and len(out) >= stop:
                break
        return out

    a, b = log("aaa", 41), log("bbbbbb", 97)
    want_a, want_b = scan(a), scan(b)
    assert want_a == [(21, "aaa RuntimeError: CUDA error: operation not permitted when stream is capturing")]
    assert want_b and want_b[0][0] == 49
    for _ in range(3):  # buffers come back from the pool already written by the other log
        assert scan(b) == want_b
        assert scan(a) == want_a
    # two scans interleaved: each holds its own pair
    ga = scanner.iter_line_hits(io.BytesIO(a * 3), matcher, scanner.ScanStats())
    gb = scanner.iter_line_hits(io.BytesIO(b * 3), matcher, scanner.ScanStats())
    got_a, got_b = [], []
    for la, lb in zip(ga, gb, strict=True):
        got_a.append(la.line)
        got_b.append(lb.line)
    assert got_a == [21, 62, 103]
    assert got_b == [49, 146, 243]


def _attribute_plain(text: str) -> tuple[object, ...]:
    """attribute() as first written: every rule's regex searched on every line."""
    from denpex.logs import attribution

    saved = attribution._NEEDS
    attribution._NEEDS = dict.fromkeys(saved, "")  # "" is in every text: no rule is skipped
    try:
        a = attribution.attribute(text)
    finally:
        attribution._NEEDS = saved
    return (a.rank, a.local_rank, a.node, a.process, a.device, tuple(a.evidence))


_PIECES = ["[rank3]:", "[default1]:", "[0,2]<stdout>:", "(VllmWorker rank=2 pid=77)", "(Worker_TP1 pid=9)",
           "(RayWorker pid=12, ip=10.0.0.2)", "DP1 TP3]", " TP2 EP1]", "node7:123:456 [3] NCCL WARN x",
           "[PG ID 0 PG GUID 0(default_pg) Rank 5]", "rank 4:", "Rank=6,", " 12: ", "3: ", "pid=", "ank",
           "TP", "] NCCL ", "[PG", "]<", ": ", "Traceback (most recent call last):",
           '  File "/x/train.py", line 9, in step', "    loss.item()", "    ^^^^", "plain text", "é"]


@pytest.mark.parametrize("seed", range(60))
def test_attribute_with_literal_guards_equals_every_regex_searched(seed: int) -> None:
    from denpex.logs.attribution import attribute

    rnd = random.Random(seed)
    for _ in range(50):
        text = rnd.choice(["", " ", "x"]).join(rnd.choice(_PIECES) for _ in range(rnd.randint(0, 4)))
        a = attribute(text)
        assert (a.rank, a.local_rank, a.node, a.process, a.device, tuple(a.evidence)) == _attribute_plain(text)


def _frames_before_plain(lines, hit_rank, hit_local):  # type: ignore[no-untyped-def]
    """frames_before as first written: every line attributed, then walked back from the end."""
    from denpex.logs import ipython
    from denpex.logs.attribution import attribute, strip_prefixes
    from denpex.logs.traceback import _FRAME, Frame

    own = []
    for no, text in lines:
        who = attribute(text)
        if hit_rank is not None and who.rank is not None and who.rank != hit_rank:
            continue
        if hit_local is not None and who.local_rank is not None and who.local_rank != hit_local:
            continue
        own.append((no, strip_prefixes(text)))
    frames = []
    code_after: dict[int, str] = {}
    arrow = None
    for i in range(len(own) - 1, -1, -1):
        no, text = own[i]
        if text.startswith(("Traceback (most recent call last)", "During handling", "The above exception")) \
                or ipython.is_header(text):
            break
        m = _FRAME.match(text)
        if m:
            frames.append(Frame(m["path"], int(m["line"]), m["func"], code_after.get(i + 1, ""), no))
        elif (ip := ipython.frame(text, arrow)) is not None:
            frames.append(Frame(ip.path, ip.line, ip.function, ip.code, no))
            arrow = None
        elif (a := ipython.arrow(text)) is not None:
            arrow = a
        else:
            stripped = text.strip()
            if stripped and not set(stripped) <= {"^", "~", " "}:
                code_after[i] = stripped
    frames.reverse()
    return frames


_TB_LINES = ["Traceback (most recent call last):", '  File "/w/train.py", line 12, in <module>',
             "    main()", '  File "/usr/lib/python3.12/site-packages/torch/cuda/graphs.py", line 88, in capture_end',
             "    super().capture_end()", "    ~~~~^^", "", "During handling of the above exception, another exception occurred:",
             "Cell In[3], line 5", "----> 5 x.item()", "      6 y", "File /tmp/ipykernel_1/123.py:5, in f(x)",
             "RuntimeError: CUDA error: operation not permitted when stream is capturing", "step 7 loss 1.0"]


@pytest.mark.parametrize("seed", range(80))
def test_frames_before_walked_from_the_end_equals_the_whole_walk(seed: int) -> None:
    from denpex.logs.traceback import frames_before

    rnd = random.Random(seed)
    prefixes = ["", "[rank0]:", "[rank1]:", "[default0]:", "[default2]:", "3: "]
    lines = [(i + 1, rnd.choice(prefixes) + rnd.choice(_TB_LINES)) for i in range(rnd.randint(0, 40))]
    for hit_rank, hit_local in ((None, None), (0, None), (1, None), (None, 0), (0, 2)):
        assert frames_before(lines, hit_rank, hit_local) == _frames_before_plain(lines, hit_rank, hit_local)


@pytest.mark.parametrize("seed", range(60))
def test_dumps_report_parses_to_the_document(seed: int) -> None:
    from denpex.logs.json_text import dumps_indented, dumps_report

    rnd = random.Random(seed)
    keys = ["schema", "verdict", "findings", "files", "warnings"]
    rnd.shuffle(keys)
    doc: dict[str, object] = {}
    for k in keys[: rnd.randint(0, 5)]:
        if k in ("findings", "files") and rnd.random() < 0.8:
            doc[k] = [{"line": i, "x": _random_json(rnd, 2)} for i in range(rnd.randint(0, 5))]
        else:
            doc[k] = _random_json(rnd, 3)
    text = dumps_report(doc)
    assert json.loads(text) == json.loads(json.dumps(doc))
    lines = text.split("\n")  # not splitlines(): U+2028 and friends stay inside a JSON string
    compacted = [k for k, v in doc.items() if k in ("findings", "files") and isinstance(v, list) and v]
    if compacted and text == dumps_indented(doc):
        return  # a value the fast writer does not take (as dumps_indented, it falls back): same text
    for k in compacted:  # each entry on the line of its own, in order
        at = lines.index(f'  "{k}": [')
        entries = doc[k]
        assert isinstance(entries, list)
        got = [json.loads(line.strip().rstrip(",")) for line in lines[at + 1 : at + 1 + len(entries)]]
        assert got == json.loads(json.dumps(entries))
        assert lines[at + 1 + len(entries)].strip() in ("]", "],")
    if not compacted:
        assert text == dumps_indented(doc)


def test_log_source_to_json_equals_asdict_with_every_field() -> None:
    from dataclasses import asdict, fields

    from denpex.logs.layout import LogSource

    src = LogSource("/p/0/stderr.log", "0/stderr.log", "torchrun", rank=3, local_rank=1, node="n1",
                    run="r_x", attempt=2, stream="stderr", evidence=["path attempt_2/1"])
    assert src.to_json() == asdict(src)
    assert list(src.to_json()) == [f.name for f in fields(LogSource)]  # a new field fails here
    assert src.to_json()["evidence"] is not src.evidence


def test_dumps_report_writes_a_summary_document_one_entry_a_line() -> None:
    from denpex.logs.json_text import dumps_report

    doc = {"schema": "denpex.diagnosis/1", "input": {"files": 2}, "verdict": {"rule": "r", "context": [[1, "a"]]},
           "findings": [{"rule": "r", "line": 3, "text": "é \u2028 x"}, {"rule": "s", "line": 9, "text": ""}],
           "files": [{"source": {"display": "0/stderr.log"}, "verdict": None}, {"source": {"display": "1"}}]}
    lines = dumps_report(doc).split("\n")
    assert lines[lines.index('  "findings": [') + 1] == '    {"rule": "r", "line": 3, "text": "é \u2028 x"},'
    assert lines[-5:] == ['  "files": [', '    {"source": {"display": "0/stderr.log"}, "verdict": null},',
                          '    {"source": {"display": "1"}}', "  ]", "}"]
    assert json.loads("\n".join(lines)) == doc


@pytest.mark.parametrize("n", [1, 31, 63, 64, 65, 87, 96, 128, 129, 200])
def test_key_groups_keep_every_key_once_and_at_most_64_a_group(n: int) -> None:
    from denpex.logs.matcher import MAX_KEYS, key_groups

    keys = tuple(f"key{i:04d}".encode() for i in range(n))
    groups = key_groups(keys)
    assert [k for g in groups for k in g] == list(keys)
    assert all(0 < len(g) <= MAX_KEYS for g in groups)
    assert len(groups) == -(-n // MAX_KEYS)  # no more passes than the fewest possible
    assert all(len(g) == MAX_KEYS for g in groups[1:])


@pytest.mark.parametrize("seed", range(40))
def test_ipython_frame_guard_skips_only_lines_whose_cleaned_text_has_no_keyword(seed: int) -> None:
    """frame() returns early, without clean(), on lines clean() would leave as they are and with no
    keyword: the full path would have returned None there too."""
    from denpex.logs import ipython
    from denpex.logs.normalise import clean, clean_already

    rnd = random.Random(seed)
    bits = ["Cell", " In", "[3]", ", line 5", "\x1b[0;32m", "\x1b[0m", "[0m", "\r", "\x07", "\x9b1m", "File ",
            "/tmp/x.py", ":5", ", in f(x)", "ipython-input-3-ab", "Input In", " [7]", ".py in ", "step()", "é", " ",
            "Fi", "le ", "C", "ell In", "[rank0]:", "[INFO]", "[1;31m", "[K", "[", "m", "K", "1;3"]
    skipped = bracketed = 0
    for _ in range(300):
        text = "".join(rnd.choice(bits) for _ in range(rnd.randint(0, 8)))
        if clean_already(text):
            assert clean(text) == text
        early = clean_already(text) and not any(k in text for k in ipython._FRAME_KEYS)
        bracketed += early and "[" in text
        if early:
            skipped += 1
            assert clean(text) == text
            assert ipython.frame(text, None) is None
        elif not any(k in clean(text) for k in ipython._FRAME_KEYS):
            assert ipython.frame(text, None) is None
    assert skipped > 0 and bracketed > 0


def test_key_dense_and_key_sparse_chunks_give_the_same_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Matcher.scan_chunk's two ways (the anchor automaton on each line a key hit, or on the whole chunk
    past KEY_HITS_PER_MIB key hits) give the same candidate offsets, on the suite's logs and on chunks
    dense in keys (benign 'exception_count=0' lines, traceback frames)."""
    from denpex.logs import matcher as matcher_mod
    from tests.conftest import DATA

    m = matcher_for(None)
    rng = random.Random(5)
    chunks = [p.read_bytes() for p in sorted(DATA.rglob("*.log"))]
    lines = ("[rank3]:[2026-11-30 00:41:07,000][llm.train][INFO] - no exceptions (exception_count=0) | loss 2.3\n",
             '[rank1]:  File "/workspace/train.py", line 88, in forward\n',
             "[rank2]:torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n",
             "[rank4]:[E1130 00:41:07.1 ProcessGroupNCCL.cpp:685] Watchdog caught collective operation timeout\n")
    for _ in range(20):
        chunks.append("".join(rng.choice(lines) for _ in range(rng.randrange(100, 12000))).encode())

    def offsets(data: bytes, per_mib: int) -> list[int]:
        monkeypatch.setattr(matcher_mod, "KEY_HITS_PER_MIB", per_mib)
        return sorted(m.scan_chunk(bytearray(data))[0])

    for data in chunks:
        assert offsets(data, 10**9) == offsets(data, -1)
