"""A lambda is a function value: passed to a capturing helper and called there, its body runs under capture
(DeepSpeed's `_graph_time(lambda: fn(gate, up))` -> `work()`, issue 19's resolution oracle). Its parameters are
its own names, not the enclosing function's."""

from __future__ import annotations

from tests.source.helpers import workspace_flags

HELPER = '''import torch


def graphed(work, *args):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        work(*args)
    return g
'''


def _flags(main: str) -> set[tuple[str, int, str]]:
    return {f for f in workspace_flags({"helper.py": HELPER, "main.py": main}) if f[0] == "main.py"}


def test_a_lambda_passed_to_a_capturing_helper_is_walked() -> None:
    main = '''import torch
from helper import graphed


def bench(x):
    graphed(lambda: x.nonzero())
'''
    assert ("main.py", 6, "capture-dynamic-shape-op") in _flags(main)


def test_a_lambda_bound_to_a_local_and_its_arguments_are_followed() -> None:
    main = '''import torch
from helper import graphed


def score(t):
    return t.sum().item()


def bench(x):
    work = lambda y: score(y)
    graphed(work, x)
'''
    assert ("main.py", 6, "capture-item-sync") in _flags(main)


def test_a_lambda_never_called_under_capture_is_not_walked() -> None:
    main = '''import torch
from helper import graphed


def bench(x):
    later = lambda: x.nonzero()
    graphed(torch.relu, x)
    return later
'''
    assert _flags(main) == set()


def test_a_lambda_parameter_shadows_the_module_name() -> None:
    # `x` inside the lambda is the lambda's own parameter (the Python int the helper passes), not the module's
    # CUDA tensor `x`
    main = '''import torch
from helper import graphed

x = torch.ones(4, device="cuda")


def bench():
    graphed(lambda x: print(x + 1), 3)
'''
    assert not {f for f in _flags(main) if f[2] == "capture-print-tensor"}
    shadowless = main.replace("lambda x: print(x + 1), 3", "lambda: print(x + 1)")
    assert ("main.py", 8, "capture-print-tensor") in _flags(shadowless)


def test_a_lambda_given_to_library_code_under_capture_runs_there() -> None:
    # torch.utils.checkpoint.checkpoint(fn, *args) calls fn inside the capture, as it does a named function
    main = '''import torch
import torch.utils.checkpoint
from helper import graphed


def layer(h):
    return torch.nonzero(h)


def bench(x):
    graphed(lambda: torch.utils.checkpoint.checkpoint(lambda h: layer(h), x, use_reentrant=False))
'''
    assert ("main.py", 7, "capture-dynamic-shape-op") in _flags(main)


def test_a_function_taken_from_a_dict_in_a_loop_is_called_by_the_lambda() -> None:
    # DeepSpeed's swiglu bench: `for name, fn in _VARIANTS.items(): _graph_time(lambda: fn(gate, up))`
    main = '''import torch
from helper import graphed


def fast(t):
    return torch.nonzero(t)


VARIANTS = {"fast": fast}


def bench(x):
    for name, fn in VARIANTS.items():
        graphed(lambda: fn(x))
'''
    assert ("main.py", 6, "capture-dynamic-shape-op") in _flags(main)


def test_lambdas_at_many_call_sites_do_not_crowd_out_the_other_values() -> None:
    # tensordict: tests pass CudaGraphModule(lambda td: ...) a hundred times; the TensorDictModule instances passed
    # elsewhere must still be followed (past the per-expression value limit, the lambdas are what is left out)
    calls = "\n".join(f"    graphed(lambda: {i})" for i in range(12))
    main = f'''import torch
from helper import graphed


def fast():
    return torch.nonzero(torch.ones(3, device="cuda"))


def bench():
    graphed(fast)
{calls}
'''
    assert ("main.py", 6, "capture-dynamic-shape-op") in _flags(main)


def test_a_parameters_callers_in_other_files_add_to_those_in_its_own() -> None:
    # DeepSpeed's graph_process(False, func, ...): local defs passed in utils.py, a bound method in bf16_optimizer.py
    helper = HELPER + '''

def local_use(x):
    def norm():
        return x.sum()
    graphed(norm)
'''
    main = '''import torch
from helper import graphed


def far(t):
    return torch.nonzero(t)


def bench(x):
    graphed(far, x)
'''
    found = {f for f in workspace_flags({"helper.py": helper, "main.py": main}) if f[0] == "main.py"}
    assert ("main.py", 6, "capture-dynamic-shape-op") in found
