"""Run in a fresh process by ``test_gpu.py``: ember's recorded matrix products stay right after
cuBLAS's cached workspaces are cleared, their memory handed to other tensors and given back to
the driver, and beside torch.compile's own CUDA graphs (whose trees clear the workspaces around
each recording). Before the recorder kept the workspace in a pool of its own, this process ended
in "an illegal memory access" (benchmarks.run --mode reduce-overhead, GPT eval).

    python tests/cudagraphs/cublas_workspace_case.py [--with-torch-compile]

Prints "ok" at the end; any mismatch or CUDA error raises.
"""
from __future__ import annotations

import sys

import torch

import ember


def main(with_torch_compile: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    pointwise = ember.compile(lambda t: (t.sin() * 2).relu(), mode="reduce-overhead")
    y = torch.randn(1024, device="cuda")
    for _ in range(3):  # recorded first: the process has no cuBLAS handle yet
        torch.testing.assert_close(pointwise(y), (y.sin() * 2).relu())
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(384, 1536), torch.nn.GELU(), torch.nn.Linear(1536, 384),
                                torch.nn.LayerNorm(384), torch.nn.Linear(384, 512)).cuda().eval()
    x = torch.randn(8, 128, 384, device="cuda")
    with torch.no_grad():
        ref = model(x)
    compiled = ember.compile(model, mode="reduce-overhead")
    other = torch.compile(model, mode="reduce-overhead") if with_torch_compile else None
    tol = dict(rtol=2e-3, atol=2e-3)
    with torch.no_grad():
        for _ in range(6):
            torch.testing.assert_close(compiled(x), ref, **tol)
            if other is not None:
                torch.testing.assert_close(other(x), ref, **tol)
        torch.cuda.synchronize()
        torch._C._cuda_clearCublasWorkspaces()
        torch.cuda.empty_cache()
        others = [torch.full((1 << 22,), 7.0, device="cuda") for _ in range(16)]
        for _ in range(3):
            out = compiled(x)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, ref, **tol)
        assert all(bool((t == 7).all()) for t in others), "a replay wrote into other tensors' memory"
        del others
        torch.cuda.empty_cache()
        out = compiled(x)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, ref, **tol)
    print("ok")


if __name__ == "__main__":
    main("--with-torch-compile" in sys.argv[1:])
