"""Issue 21: graph and reduce-overhead compiled outputs collected across loop iterations (compile-output-collected
of DPX700, static-output-collected of DPX302). Every entry kept aliases the one output buffer the next call or
replay writes; the legal forms (clone, a host copy, a container made per iteration, a constant key, a capture
per iteration) stay clean. Lines are found by a marker comment."""

from __future__ import annotations

import textwrap
from pathlib import Path

from denpex.source import analyse_source
from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace


def _lines(text: str, rule: str, hazard_words: str = "") -> list[tuple[int, str]]:
    found = analyse_source(textwrap.dedent(text), "case.py")
    return sorted((f.start_line, f.severity) for f in found if f.rule == rule and hazard_words in f.message)


def _line(text: str, marker: str) -> int:
    rows = [i for i, ln in enumerate(textwrap.dedent(text).splitlines()) if marker in ln]
    assert len(rows) == 1, (marker, rows)
    return rows[0]


def _ws(files: dict[str, str], rule: str) -> list[tuple[str, int, str, str]]:
    ws = Workspace()
    for p, t in files.items():
        ws.add_text(p, textwrap.dedent(t))
    out = analyse_workspace(ws)
    return sorted((Path(p).name, f.start_line, f.severity, f.message) for p, fs in out.items() for f in fs
                  if f.rule == rule)


COMPILED = """
    import torch

    model = torch.nn.Linear(8, 8).cuda()
    scorer = torch.compile(model, mode="reduce-overhead")
    plain = torch.compile(model)

    def score(batches):
        all_logits, by_id, norms, last = [], {}, [], {}
        for i, ids in enumerate(batches):
            logits = scorer(ids)
            all_logits.append(logits)  # APPEND
            by_id[i] = scorer(ids).detach()  # ITEM
            norms.append(logits.norm().item())  # HOST
            last["out"] = logits  # CONSTKEY
            all_logits.append(scorer(ids).clone())  # CLONED
            all_logits.append(plain(ids))  # DEFAULTMODE
            step = []
            step.append(scorer(ids))  # FRESH
        return all_logits, by_id, norms, last
"""


def test_compiled_outputs_collected_in_a_loop_are_errors_on_the_keeping_line() -> None:
    got = _lines(COMPILED, "compile-output-overwritten")
    assert got == [(_line(COMPILED, "# APPEND"), "error"), (_line(COMPILED, "# ITEM"), "error")]


def test_the_fix_clones_the_kept_value_and_is_unsafe() -> None:
    found = [f for f in analyse_source(textwrap.dedent(COMPILED), "case.py")
             if f.rule == "compile-output-overwritten" and f.start_line == _line(COMPILED, "# APPEND")]
    assert len(found) == 1
    fixes = [x for x in found[0].fixes if x.title == "Clone kept outputs"]
    assert fixes and fixes[0].safety == "unsafe"
    assert [e.new_text for e in fixes[0].edits] == ["logits.clone()"]


def test_compiled_output_returned_by_a_method_and_kept_by_a_caller_in_another_file() -> None:
    files = {
        "/p/scoring.py": """
            import torch

            class Scorer:
                def __init__(self, model):
                    self.fn = torch.compile(model, mode="reduce-overhead")

                def score(self, ids):
                    out = self.fn(ids)
                    return out

                def score_copy(self, ids):
                    return self.fn(ids).clone()
        """,
        "/p/main.py": """
            from scoring import Scorer

            def run(model, batches, store):
                s = Scorer(model)
                kept = []
                for b in batches:
                    store.add(b, s.score(b))
                    kept.append(s.score_copy(b))
                return kept
        """,
    }
    got = _ws(files, "compile-output-overwritten")
    assert [(p, ln, sev) for p, ln, sev, _m in got] == [("main.py", 7, "error")]  # 0-based: store.add(b, s.score(b))
    assert "score() (scoring.py:8) returns it" in got[0][3]


def test_a_comprehension_of_compiled_calls_keeps_one_buffer_per_element() -> None:
    text = """
        import torch

        f = torch.compile(torch.sin, mode="reduce-overhead")

        def run(xs):
            outs = [f(x) for x in xs]  # COMP
            sums = [f(x).sum().item() for x in xs]  # SCALAR
            return outs, sums
    """
    assert _lines(text, "compile-output-overwritten") == [(_line(text, "# COMP"), "error")]


GRAPH = """
    import torch

    class Runner:
        def __init__(self, model, example):
            self.static_in = example.clone()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_out = model(self.static_in)

        def run(self, batch):
            self.static_in.copy_(batch)
            self.graph.replay()
            return self.static_out

        def run_all(self, batches):
            outs = {}
            for i, b in enumerate(batches):
                self.static_in.copy_(b)
                self.graph.replay()
                outs[i] = self.static_out  # RUNALL
            return outs

    def main(model, batches):
        r = Runner(model, batches[0])
        kept, norms = [], []
        for b in batches:
            y = r.run(b)
            kept.append(y)  # CALLER
            norms.append(y.norm().item())  # NORM
            kept.append(r.run(b).clone())  # CLONED
        return kept, norms
"""


def test_static_outputs_collected_in_replay_loops_and_through_a_returning_method() -> None:
    got = _lines(GRAPH, "replay-output-kept-without-clone", "kept across loop iterations")
    assert got == [(_line(GRAPH, "# RUNALL"), "error"), (_line(GRAPH, "# CALLER"), "error")]


def test_a_capture_per_iteration_makes_a_new_output_each_time() -> None:
    text = """
        import torch

        def run(batches):
            kept = []
            for b in batches:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = b * 2
                g.replay()
                kept.append(out)  # FRESH
            return kept
    """
    assert _lines(text, "replay-output-kept-without-clone") == []
