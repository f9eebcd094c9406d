"""Module names bound in branches (issue 19, reach): a function defined under `if HAVE_TE:` / `else:` or `try:` at
module level is a module function, a name imported in `try:` with an `except ImportError: f = None` fallback is the
imported function, and a def read from inside one branch is that branch's own (Megatron-LM fp8_utils.py defines
`get_fp8_context` and `get_fp8_recipe` in both arms of `if HAVE_TE:`; flash-attention's mha.py imports
`flash_attn_with_kvcache` with a `None` fallback)."""

from __future__ import annotations

from tests.source.helpers import capture_program, workspace_flags


def test_a_def_in_a_module_level_branch_is_reached() -> None:
    ops = ("import torch\n\n"
           "if torch.cuda.is_available():\n"
           "    def fused(x):\n"
           "        return x * x.sum().item()\n"  # line 5
           "else:\n"
           "    def fused(x):\n"
           "        return x\n")
    main = capture_program("from ops import fused", "y = fused(x)")
    assert ("ops.py", 5, "capture-item-sync") in workspace_flags({"ops.py": ops, "main.py": main})


def test_a_def_under_try_at_module_level_is_reached() -> None:
    ops = ("try:\n"
           "    import fastlib\n"
           "    def fused(x):\n"
           "        return x.max().item()\n"  # line 4
           "except ImportError:\n"
           "    fused = None\n")
    main = capture_program("from ops import fused", "y = fused(x)")
    assert ("ops.py", 4, "capture-item-sync") in workspace_flags({"ops.py": ops, "main.py": main})


def test_an_import_with_a_none_fallback_is_the_imported_function() -> None:
    kern = "def fast(x):\n    return x.max().item()\n"  # line 2
    main = capture_program("try:\n    from kern import fast\nexcept ImportError:\n    fast = None\n\n\n"
                                  "def step(x):\n    return fast(x)", "y = step(x)")
    assert ("kern.py", 2, "capture-item-sync") in workspace_flags({"kern.py": kern, "main.py": main})


def test_a_none_fallback_alone_reaches_nothing() -> None:
    """No import binds the name: the `None` is all it is, and nothing is entered (no guess by name)."""
    kern = "def fast(x):\n    return x.max().item()\n"
    main = capture_program("try:\n    import kern\nexcept ImportError:\n    fast = None\n\n\n"
                                  "def step(x):\n    return fast(x)", "y = step(x)")
    assert not any(p == "kern.py" for p, _l, _r in workspace_flags({"kern.py": kern, "main.py": main}))


def test_a_def_read_inside_a_branch_is_that_branchs_own() -> None:
    """`f` exists only in the `else:` arm, so the `g` it calls is that arm's (the first `g` is the other arm's)."""
    ops = ("import torch\n\n"
           "if torch.version.hip:\n"
           "    def g(x):\n"
           "        return x\n"
           "else:\n"
           "    def g(x):\n"
           "        return x.max().item()\n"  # line 8
           "\n"
           "    def f(x):\n"
           "        return g(x)\n")
    main = capture_program("from ops import f", "y = f(x)")
    assert ("ops.py", 8, "capture-item-sync") in workspace_flags({"ops.py": ops, "main.py": main})
