"""The GPU scenarios (tests/data/gpu/scenarios, real behaviour on PyTorch 2.11 on an H200) as ground truth:
failing and silently-wrong scenarios are flagged on their offending line with the right rule; fixed twins and
legal patterns have no error-level finding; Denpex's own first fix turns a failing scenario into code that
is equal in intent to its fixed twin (compared through `ast`, not bytes)."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest

from denpex.source import analyse_source
from denpex.source.engine.analyse import apply_edits
from tests.source.helpers import SCENARIOS

# scenario -> (1-based line, rule) that must be reported
EXPECTED: dict[str, list[tuple[int, str]]] = {
    "01_item_in_capture": [(9, "capture-item-sync")],  # in step(), called from the capture
    "02_cpu_in_capture": [(14, "capture-host-copy")],  # not the warm-up .cpu() on line 10
    "03_tolist_in_capture": [(8, "capture-host-copy")],
    "04_print_tensor_in_capture": [(8, "capture-print-tensor")],
    "05_implicit_bool_if": [(9, "capture-implicit-bool")],
    "06_nonzero_in_capture": [(7, "capture-dynamic-shape-op")],
    "07_bool_mask_index": [(7, "capture-dynamic-shape-op")],
    "08_unique_in_capture": [(7, "capture-dynamic-shape-op")],
    "09_synchronize_in_capture": [(8, "capture-explicit-sync")],
    "10_tensor_ctor_in_capture": [(7, "capture-host-copy")],
    "11_to_cuda_pageable_in_capture": [(8, "capture-host-copy")],
    "15_no_warmup_matmul": [(9, "lazy-init-cublas")],
    "16_no_warmup_conv_benchmark": [(10, "lazy-init-cudnn")],
    "17_no_warmup_train_step": [(16, "lazy-init-cublas")],
    "18_side_stream_no_wait": [(10, "capture-side-stream-no-fork")],
    "19_side_stream_fork_no_join": [(11, "cuda-904-capture-unjoined")],
    "21_rng_custom_generator_unregistered": [(8, "rng-unregistered-generator")],
    "22_adam_capturable_false": [(37, "optim-capturable-false")],
    "23_rebind_static_input": [(20, "replay-rebound-static-input")],
    "24_replay_after_del_input_realloc": [(11, "replay-freed-input")],
    "25_replay_after_del_input_empty_cache": [(14, "replay-freed-input")],
    "26_output_overwritten_by_next_replay": [(12, "replay-output-kept-without-clone")],
    "27_batch_shape_change": [(17, "replay-shape-change")],
    "33_compile_ro_output_overwritten": [(14, "compile-output-overwritten")],
    "34_compile_ro_markstep_then_read_old": [(16, "compile-output-overwritten")],
    "35_make_graphed_callables_item": [(13, "capture-item-sync")],
    "36_sync_debug_error_item_in_capture": [(9, "capture-item-sync")],
    "38_state_after_failed_capture": [(9, "capture-item-sync")],
    "39_item_in_capture_relaxed_mode": [(8, "capture-item-sync")],
    "40_python_scalar_baked_in": [(9, "replay-frozen-python-scalar")],
    "41_sync_debug_warn_item_in_capture": [(9, "capture-item-sync")],
    "42_compile_ro_overwritten_record_output": [(13, "compile-output-overwritten")],
    "43_compile_ro_overwritten_warmup_output": [(12, "compile-output-overwritten")],
    "44_to_cuda_pageable_nonblocking_in_capture": [(9, "capture-host-copy")],
    "45_setitem_int_index_scalar_in_capture": [(9, "capture-host-copy")],
    "46_setitem_tensor_index_scalar_in_capture": [(9, "capture-host-copy")],
    "48_event_query_in_capture": [(12, "capture-explicit-sync")],
    "49_event_synchronize_in_capture": [(12, "capture-explicit-sync")],
    "50_event_query_precapture_event_in_capture": [(11, "capture-explicit-sync")],
    "51_current_stream_synchronize_in_capture": [(8, "capture-explicit-sync")],
    "52_capture_begin_default_stream": [(7, "stream-capture-default-stream")],
    "53_manual_seed_in_capture": [(8, "rng-manual-seed-in-capture")],
    "54_manual_seed_same_seed_in_capture": [(8, "rng-manual-seed-in-capture")],
    "57_gradscaler_step_in_capture": [(35, "capture-gradscaler-step"), (36, "capture-gradscaler-step")],
    "58_adam_capturable_float_lr_scheduler": [(12, "optim-capturable-float-lr")],
    # load_state_dict of a non-capturable checkpoint: capturable back to False / state['step'] left on the CPU
    "59_adam_capturable_load_noncapturable_state": [(33, "optim-capturable-false")],
    "60_adam_capturable_load_state_flag_restored_step_cpu": [(33, "optim-capturable-device")],
    "61_make_graphed_callables_autocast_cache": [(12, "mgc-autocast-cache")],
    "63_compile_ro_cudamallocasync": [(4, "alloc-cudamallocasync")],
    "64_logging_tensor_in_capture": [(13, "capture-print-tensor")],
    "66_fstring_tensor_in_capture": [(11, "capture-item-sync")],
    "68_compile_ro_cudagraph_or_error_mutated_input": [(14, "compile-skip-cudagraphs")],  # buf.add_(1)
    "69_dataloader_pin_thread_global_capture": [(89, "capture-foreign-thread")],
    "70_dataloader_prefetch_h2d_thread_global_capture": [(89, "capture-foreign-thread")],
    # `eager_out = step()` on the default stream keeps w's AccumulateGrad node on the legacy stream (906)
    "71_checkpoint_dropout_in_captured_fwd_bwd": [(33, "cuda-906-legacy-stream-dependency")],
    "72_checkpoint_dropout_no_preserve_rng_in_capture": [(33, "cuda-906-legacy-stream-dependency")],
}
# real failures the source analyser does not catch yet (classified, not asserted)
NOT_YET: set[str] = set()
# exit 0 on the GPU and correct results: at most warnings/infos
LEGAL = {
    "12_to_cuda_pinned_nonblocking_in_capture", "13_empty_cache_in_capture",
    "14_empty_cache_between_capture_and_replay", "20_rng_default_generator", "28_compile_ro_item_graph_break",
    "29_compile_ro_item_capture_scalar", "30_compile_ro_dynamic_shapes", "31_compile_ro_mutated_input",
    "32_compile_ro_cpu_tensor", "37_sync_debug_error_clean_capture", "47_torch_full_in_capture",
    "55_get_rng_state_in_capture", "56_checkpoint_in_captured_fwd_bwd", "62_triton_first_launch_in_capture",
    "65_logging_tensor_in_capture_level_warning", "67_guarded_print_in_capture",
}


def _scenario(name: str) -> str:
    return (SCENARIOS / f"{name}.py").read_text(encoding="utf-8")


def _all_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.py"))


def test_scenarios_are_in_the_repository() -> None:
    # a missing copy must fail here, not make the glob-driven tests below pass on nothing
    names = set(_all_names())
    wanted = set(EXPECTED) | LEGAL | NOT_YET | {f"{n}__fixed" for n in INTENT}
    assert not wanted - names, f"missing from {SCENARIOS}: {sorted(wanted - names)}"


def test_every_scenario_is_classified() -> None:
    for name in _all_names():
        if name.endswith("__fixed"):
            continue
        assert name in EXPECTED or name in LEGAL or name in NOT_YET, f"unclassified scenario {name}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_failing_scenario_flagged(name: str) -> None:
    found = {(f.start_line + 1, f.rule) for f in analyse_source(_scenario(name), f"{name}.py")}
    for want in EXPECTED[name]:
        assert want in found, f"{name}: expected {want}, got {sorted(found)}"


def test_warmup_cpu_not_flagged() -> None:
    lines = [f.start_line + 1 for f in analyse_source(_scenario("02_cpu_in_capture"), "02.py")]
    assert 10 not in lines and 14 in lines


def test_item_in_callee_names_the_capture_site() -> None:
    (f,) = [f for f in analyse_source(_scenario("01_item_in_capture"), "01.py") if f.rule == "capture-item-sync"]
    assert f.capture_site is not None and f.capture_site.line + 1 == 21 and f.via == ("step",)


@pytest.mark.parametrize("name", sorted([n for n in _all_names() if n.endswith("__fixed")] + sorted(LEGAL)))
def test_fixed_and_legal_have_no_errors(name: str) -> None:
    errors = [f for f in analyse_source(_scenario(name), f"{name}.py") if f.severity == "error"]
    assert not errors, [(f.start_line + 1, f.rule) for f in errors]


# ---- Denpex's own fix vs the fixed twin ------------------------------------------------------------------------
def _consts(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            out.setdefault(st.targets[0].id, st.value)
    return out


def _resolve(tree: ast.Module, e: ast.expr) -> ast.expr:
    c = _consts(tree)
    seen = 0
    while isinstance(e, ast.Name) and e.id in c and seen < 5:
        e, seen = c[e.id], seen + 1
    return e


def _func(tree: ast.Module, name: str) -> str:
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef) and n.name == name:
            return ast.dump(ast.Module(body=n.body, type_ignores=[]))
    raise AssertionError(name)


def _graph_with(tree: ast.Module) -> ast.With:
    for n in ast.walk(tree):
        if isinstance(n, ast.With) and any("graph" in ast.unparse(i.context_expr) for i in n.items):
            return n
    raise AssertionError("no graph with")


def _stmt_dump(tree: ast.Module, prefix: str) -> list[str]:
    return [ast.dump(s) for s in ast.walk(tree) if isinstance(s, ast.stmt) and ast.unparse(s).startswith(prefix)]


def _calls_in(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            out.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    return out


def _warmup(tree: ast.Module) -> tuple[bool, bool]:
    g = _graph_with(tree)
    captured = _calls_in(ast.Module(body=g.body, type_ignores=[]))
    for n in tree.body:
        if n is g:
            break
        if isinstance(n, ast.With) and "cuda.stream" in ast.unparse(n.items[0].context_expr):
            loops = [x for x in ast.walk(n) if isinstance(x, ast.For)]
            return bool(loops), captured <= _calls_in(n)
    return False, False


def _after_replay(tree: ast.Module, text: str) -> bool:
    seen = False
    for st in tree.body:
        s = ast.unparse(st)
        if s.startswith("g.replay("):
            seen = True
        elif seen and s.startswith(text):
            return True
    return False


class _Subst(ast.NodeTransformer):
    def __init__(self, consts: dict[str, ast.expr]) -> None:
        self.consts = consts

    def visit_Name(self, node: ast.Name) -> ast.expr:
        value = self.consts.get(node.id)
        return value if value is not None and not isinstance(value, ast.Name) else node


def _kw(tree: ast.Module, func_sub: str, kw: str) -> str:
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and func_sub in ast.unparse(n.func):
            for k in n.keywords:
                if k.arg == kw:
                    return ast.unparse(_Subst(_consts(tree)).visit(_resolve(tree, k.value)))
    return "<absent>"


INTENT: dict[str, Callable[[ast.Module], object]] = {
    "01_item_in_capture": lambda t: _func(t, "step"),
    "02_cpu_in_capture": lambda t: (ast.dump(ast.Module(body=_graph_with(t).body, type_ignores=[])),
                                    _after_replay(t, "host = y.cpu()")),
    "05_implicit_bool_if": lambda t: _func(t, "step"),
    "06_nonzero_in_capture": lambda t: _stmt_dump(t, "idx = "),
    "07_bool_mask_index": lambda t: _stmt_dump(t, "out = "),
    "10_tensor_ctor_in_capture": lambda t: (_stmt_dump(t, "c = "), ast.dump(_graph_with(t))),
    "15_no_warmup_matmul": _warmup,
    "16_no_warmup_conv_benchmark": _warmup,
    "17_no_warmup_train_step": _warmup,
    "18_side_stream_no_wait": lambda t: _func(t, "step"),
    "21_rng_custom_generator_unregistered": lambda t: _stmt_dump(t, "g.register_generator_state"),
    "22_adam_capturable_false": lambda t: _kw(t, "optim.Adam", "capturable"),
    "23_rebind_static_input": lambda t: _stmt_dump(t, "static_x"),
    "26_output_overwritten_by_next_replay": lambda t: _stmt_dump(t, "out_a = "),
    "27_batch_shape_change": lambda t: ("zero_" in ast.unparse(t), "static_x[:" in ast.unparse(t).replace(" ", ""),
                                        _max_rows(t)),
    "33_compile_ro_output_overwritten": lambda t: _stmt_dump(t, "a = "),
    "35_make_graphed_callables_item": lambda t: _func(t, "forward"),
    "40_python_scalar_baked_in": lambda t: (_stmt_dump(t, "scale = "), _stmt_dump(t, "scale.fill_")),
    "45_setitem_int_index_scalar_in_capture": lambda t: ast.dump(_graph_with(t)),
    "46_setitem_tensor_index_scalar_in_capture": lambda t: ast.dump(_graph_with(t)),
    "52_capture_begin_default_stream": lambda t: [ast.dump(ast.Module(body=n.body, type_ignores=[]))
                                                  for n in t.body if isinstance(n, ast.With)],
    "57_gradscaler_step_in_capture": lambda t: ("scaler.step" not in ast.unparse(_graph_with(t)),
                                                "scaler.step" in ast.unparse(t).split("g.replay()", 1)[1]),
    "58_adam_capturable_float_lr_scheduler": lambda t: _kw(t, "optim.Adam", "lr").replace("0.01", "1e-2"),
    "61_make_graphed_callables_autocast_cache": lambda t: _kw(t, "autocast", "cache_enabled"),
    "69_dataloader_pin_thread_global_capture": lambda t: _kw(t, "cuda.graph", "capture_error_mode"),
    "70_dataloader_prefetch_h2d_thread_global_capture": lambda t: _kw(t, "cuda.graph", "capture_error_mode"),
}


def _max_rows(t: ast.Module) -> str:
    for n in ast.walk(t):
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "static_x" and isinstance(n.value, ast.Call):
            return ast.unparse(_resolve(t, n.value.args[0]))
    return "?"


@pytest.mark.parametrize("name", sorted(INTENT))
def test_own_fix_matches_fixed_twin(name: str) -> None:
    text = _scenario(name)
    rules = {r for _ln, r in EXPECTED[name]}
    lines = {ln - 1 for ln, _r in EXPECTED[name]}
    findings = [f for f in analyse_source(text, f"{name}.py") if f.rule in rules and f.start_line in lines]
    assert findings and findings[0].fixes, f"{name}: no fix"
    fixed = apply_edits(text, findings[0].fixes[0].edits)
    mine = ast.parse(fixed)
    twin = ast.parse(_scenario(f"{name}__fixed"))
    assert INTENT[name](mine) == INTENT[name](twin), f"{name}: fix differs in intent\n{fixed}"
