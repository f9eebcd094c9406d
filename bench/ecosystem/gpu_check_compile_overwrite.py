"""GPU check behind two verdicts of verdicts.tsv (torchao, compile-output-overwritten): is the first output of a
reduce-overhead compiled function still readable after a second call, (a) with no autograd, as in
test_quantize_2d.py:339-343, and (b) when the forward's output needs a backward that has not run, as in
test_nvfp4_linear.py:207-217 (also with its compiled-autograd warm-up)? Prints one line per case: ok (equal) or the error raised.

    python bench/ecosystem/gpu_check_compile_overwrite.py     # needs a CUDA GPU and torch
"""

from __future__ import annotations

import torch


def case(name: str, grad: bool) -> None:
    torch._dynamo.reset()
    lin = torch.nn.Linear(64, 64, device="cuda")
    lin.requires_grad_(grad)
    x1 = torch.randn(8, 64, device="cuda", requires_grad=grad)
    x2 = torch.randn(8, 64, device="cuda", requires_grad=grad)

    def run(t: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = lin(t).relu().clone()
        return out

    f = torch.compile(run, mode="reduce-overhead", fullgraph=True)
    stage = "warm-up"
    try:
        for _ in range(3):  # warm-up, then recorded, as the tests do
            out = f(x1)
            if grad:
                out.sum().backward()  # type: ignore[no-untyped-call]
            del out  # no output of an earlier call alive at the next one
        stage = "r1, r2 = f(x1), f(x1); assert_close(r1, r2) (the tests' pattern)"
        r1 = f(x1)
        r2 = f(x1)
        torch.testing.assert_close(r1, r2)
        del r1, r2
        stage = "r1, r2 = f(x1), f(x2); is r1 still f(x1)?"
        with torch.no_grad():
            want = run(x1)
        r1 = f(x1)
        r2 = f(x2)
        same_storage = r1.data_ptr() == r2.data_ptr()
        intact = torch.allclose(r1, want)
        print(f"{name}: tests' pattern passes; with different inputs r1 shares r2's storage: {same_storage}, "
              f"r1 still equals f(x1): {intact}")
    except Exception as exc:  # the point is which error, if any, and where
        print(f"{name}: at {stage}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")


def case_compiled_autograd(name: str) -> None:
    """test_nvfp4_linear.py:195-217 as written there, with a bf16 nn.Linear for NVFP4Linear: warm-up of forward
    and backward under compiled autograd, then r1 = f(x), r2 = f(x) with no backward between (r1 and r2 still
    need one), and the same with a second input to see whether r1 keeps its own values."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    layer = torch.nn.Linear(256, 128, bias=False).cuda().to(torch.bfloat16)
    x = torch.randn(64, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    x2 = torch.randn(64, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    f = torch.compile(layer, mode="reduce-overhead", fullgraph=True)
    bwd = torch.compile(fullgraph=True, mode="reduce-overhead")
    stage = "warm-up under compiled autograd"
    try:
        for _ in range(3):
            with torch._dynamo.compiled_autograd._enable(bwd):
                out = f(x)
                out.sum().backward()
        del out
        stage = "r1, r2 = f(x), f(x)"
        r1 = f(x)
        r2 = f(x)
        torch.testing.assert_close(r1, r2)
        same = r1.data_ptr() == r2.data_ptr()
        del r1, r2
        stage = "r1, r2 = f(x), f(x2)"
        with torch.no_grad():
            want = layer(x)
        r1 = f(x)
        r2 = f(x2)
        print(f"{name}: tests' pattern passes (r1 and r2 share storage: {same}); with x2: r1 shares r2's storage: "
              f"{r1.data_ptr() == r2.data_ptr()}, r1 still equals f(x): {torch.allclose(r1, want)}")
    except Exception as exc:
        print(f"{name}: at {stage}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")


if __name__ == "__main__":
    print("torch", torch.__version__, torch.cuda.get_device_name())
    case("no-grad (test_quantize_2d.py)", grad=False)
    case("pending-backward (test_nvfp4_linear.py)", grad=True)
    case_compiled_autograd("pending-backward, compiled autograd warm-up as in test_nvfp4_linear.py")
