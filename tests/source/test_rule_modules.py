"""The source rule modules (server/denpex/source/rules/): each declared hazard fires on its rule's own examples,
the registry refuses modules that disagree with each other or with the rule book, and a disabled rule's
detectors are not even dispatched to."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from denpex.rulebook import load_rulebook
from denpex.source.config import ScanConfig
from denpex.source.engine.analyse import analyse_source
from denpex.source.rules import RegistryError, build, check_against, registry, rule_set
from denpex.source.rules._api import Around, Claim, Hazard, SourceRule
from tests.source.helpers import annotations

BOOK = load_rulebook()
REG = registry()


@pytest.mark.parametrize("rule_id", sorted(REG.rules))
def test_every_declared_hazard_fires_on_a_ruleid_line(rule_id: str) -> None:
    rule = next(r for r in BOOK.rules if r.id == rule_id)
    assert rule.source is not None
    text = rule.source.invalid
    marked = {ln for ln, ids in annotations(text)["ruleid"].items() if rule_id in ids}
    fired = {f.hazard for f in analyse_source(text, f"{rule_id}.py", rulebook=BOOK)
             if f.rule == rule_id and f.start_line in marked}
    declared = {h.id for h in REG.rules[rule_id].hazards}
    assert declared - fired == set(), f"declared but never fired on a # ruleid: line: {sorted(declared - fired)}"


def test_modules_and_rule_book_agree() -> None:
    check_against(BOOK)
    with_source = {r.id for r in BOOK.rules if r.source is not None}
    assert set(REG.rules) == with_source
    assert len(REG.rules) >= 30


def _module(rule: SourceRule) -> types.SimpleNamespace:
    return types.SimpleNamespace(RULE=rule)


def _noop_claim(*_a: object) -> bool:
    return False


def _noop_around(*_a: object) -> None:
    return None


def test_a_hazard_declared_twice_fails_loudly() -> None:
    a = SourceRule("rule-a", (Hazard("same-hazard"),))
    b = SourceRule("rule-b", (Hazard("same-hazard"),))
    with pytest.raises(RegistryError, match="hazard same-hazard is declared by both rule-a and rule-b"):
        build([("rule_a", _module(a)), ("rule_b", _module(b))])


def test_claims_of_one_precedence_fail_loudly() -> None:
    a = SourceRule("rule-a", (Hazard("h-a"),), claims=(Claim(10, _noop_claim),))
    b = SourceRule("rule-b", (Hazard("h-b"),), claims=(Claim(10, _noop_claim),))
    with pytest.raises(RegistryError, match="precedence 10"):
        build([("rule_a", _module(a)), ("rule_b", _module(b))])


def test_misnamed_module_and_missing_rule_fail_loudly() -> None:
    with pytest.raises(RegistryError, match="name the module after it"):
        build([("other_name", _module(SourceRule("rule-a", (Hazard("h-a"),))))])
    with pytest.raises(RegistryError, match="defines no RULE"):
        build([("rule_a", types.SimpleNamespace())])
    with pytest.raises(RegistryError, match="unknown hook node type"):
        build([("rule_a", _module(SourceRule("rule-a", (Hazard("h-a"),), on_node={"lambda": ()})))])


def test_the_claims_are_ordered_by_their_precedence_only() -> None:
    every = rule_set(REG.rules)
    precedences = [c.precedence for c in every.claims]
    assert precedences == sorted(precedences) and len(set(precedences)) == len(precedences)
    # an .item() read is the item rule's, before any copy or side-effect rule looks at the call
    item = next(c for c in every.claims if c.detect.__module__.endswith("capture_item_sync"))
    host = next(c for c in every.claims if c.detect.__module__.endswith("capture_host_copy"))
    assert item.precedence < host.precedence


def test_a_disabled_rule_is_not_dispatched_to() -> None:
    enabled = set(REG.rules) - {"capture-item-sync", "replay-rebound-static-input"}
    rs = rule_set(enabled)
    modules = {f.__module__ for f in (*[c.detect for c in rs.claims], *rs.on_call, *rs.on_condition,
                                       *[h for hs in rs.on_node.values() for h in hs], *[a.run for a in rs.around])}
    assert not any(m.endswith(("capture_item_sync", "replay_rebound_static_input")) for m in modules)
    assert any(m.endswith("capture_host_copy") for m in modules)
    assert rule_set(set()).claims == () and rule_set(set()).around == ()


def test_disabling_a_rule_leaves_the_others_findings() -> None:
    text = textwrap.dedent("""\
        import torch
        g = torch.cuda.CUDAGraph()
        x = torch.randn(8, device="cuda")
        with torch.cuda.graph(g):
            v = x.sum().item()
            h = x.cpu()
        """)
    every = {(f.rule, f.start_line) for f in analyse_source(text, "a.py", rulebook=BOOK)}
    assert {("capture-item-sync", 4), ("capture-host-copy", 5)} <= every
    cfg = ScanConfig(ignore=frozenset({"capture-item-sync"}))
    some = {(f.rule, f.start_line) for f in analyse_source(text, "b.py", config=cfg, rulebook=BOOK)}
    assert ("capture-item-sync", 4) not in some and ("capture-host-copy", 5) in some


def test_a_user_rule_with_an_unknown_source_hazard_is_a_one_line_error(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    src = next(p for p in (Path(__file__).resolve().parents[2] / "rules").rglob("capture-item-sync.yaml"))
    text = src.read_text(encoding="utf-8").replace("id: capture-item-sync", "id: my-item-rule").replace(
        "code: DPX101", "code: DPX991").replace("hazards: [item-call, host-scalar-conversion, tensor-format]",
                                                "hazards: [my-new-hazard]")
    (rules / "my-item-rule.yaml").write_text(text, encoding="utf-8")
    code = tmp_path / "t.py"
    code.write_text("import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    v = x.item()\n",
                    encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "denpex", "scan", str(code), "--rules", str(rules)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "my-item-rule" in err[0] and "my-new-hazard" in err[0], p.stderr


def test_around_detectors_run_in_their_order() -> None:
    order = [a.order for a in rule_set(REG.rules).around]
    assert order == sorted(order)
    rs = rule_set({"replay-rebound-static-input"})
    assert [a.order for a in rs.around] == [80, 200]
    assert all(isinstance(a, Around) for a in rs.around)
