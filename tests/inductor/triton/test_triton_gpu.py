"""On a CUDA GPU: the shared cases, the model corpus (forward and backward) and the kernel caches
with real Triton kernels, against eager. Skipped without CUDA."""
from __future__ import annotations

import copy
import glob
import os
import subprocess
import sys

import pytest
import torch

pytestmark = pytest.mark.gpu
pytest.importorskip("triton", reason="triton is not installed")

from benchmarks.models import GPT, ResNet18, TinyMLP  # noqa: E402
from triton_cases import case_ids, get, inputs_on  # noqa: E402
from triton_checks import check  # noqa: E402

if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    pytest.skip("the GPU tests need TRITON_INTERPRET unset", allow_module_level=True)


@pytest.fixture(autouse=True)
def _exact_convolutions():
    """cuDNN's TF32 convolutions round differently for inputs that differ in the last bit, so the
    model comparisons below would measure TF32 noise rather than ember's kernels."""
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = saved


@pytest.mark.parametrize("case_id", case_ids())
def test_case_on_cuda(case_id: str) -> None:
    _, fn, make = get(case_id)
    # x[i] = float("nan") on a CUDA tensor copies a CPU scalar constant to the device: that copy
    # stays an aten call (lift_fresh_copy + copy), the rest is lowered.
    check(fn, *inputs_on(make, "cuda"), lowered=case_id != "nan_propagation")


def test_unaligned_input_takes_the_generic_launch() -> None:
    base = torch.randn(1025, device="cuda")
    compiled = check(lambda x: x.sin() * 2, base[:1024])
    x = base[1:]
    torch.testing.assert_close(compiled(x), x.sin() * 2)


def _train_step(model: torch.nn.Module, x: torch.Tensor) -> tuple:
    model.zero_grad()
    out = model(x)
    out.float().pow(2).mean().backward()
    return out.detach(), [p.grad.clone() for p in model.parameters()]


def test_autotuned_atomic_adds_land_once() -> None:
    """The GPT step's token embedding gradient (2048 tokens of 384 features into 2048 rows): its
    scatter has several configurations to tune, each launched 11 times on a copy of the target."""
    from ember_inductor.backend import compile_inference

    g = torch.randn(16, 128, 384, device="cuda")
    ids = torch.randint(0, 2048, (16, 128), device="cuda")
    fn = lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, 2048, -1, False)  # noqa: E731
    compiled = compile_inference(fn, [g, ids])
    assert "tl.atomic_add(" in compiled.compiled.source
    for _ in range(2):
        torch.testing.assert_close(compiled(g, ids), fn(g, ids), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("model_fn,make_input", [
    (lambda: ResNet18(num_classes=10, width=16), lambda: torch.randn(4, 3, 32, 32, device="cuda")),
    (lambda: GPT(vocab=128, d=64, heads=4, layers=2, max_seq=32),
     lambda: torch.randint(0, 128, (2, 32), device="cuda")),
    (lambda: TinyMLP(), lambda: torch.randn(1, 64, device="cuda")),
], ids=["resnet18", "gpt", "tiny_mlp"])
def test_model_forward_and_backward(model_fn, make_input) -> None:
    ember = pytest.importorskip("ember")
    torch.manual_seed(0)
    model = model_fn().cuda()
    ref = copy.deepcopy(model)
    compiled = ember.compile(model, backend="inductor")
    model.eval()
    ref.eval()
    with torch.no_grad():
        for _ in range(2):
            x = make_input()
            torch.testing.assert_close(compiled(x), ref(x), rtol=1e-3, atol=1e-3)
    model.train()
    ref.train()
    for _ in range(2):
        x = make_input()
        out, grads = _train_step(compiled, x)
        ref_out, ref_grads = _train_step(ref, x)
        torch.testing.assert_close(out, ref_out, rtol=1e-3, atol=1e-3)
        for g, w in zip(grads, ref_grads):
            assert (g - w).abs().max().item() <= 1e-2 * (w.abs().max().item() + 1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [1, 8])
def test_small_linear_relu_is_addmm_activation(dtype: torch.dtype, rows: int) -> None:
    """cuBLASLt's ReLU epilogue (or the ReLU in place on the product, where aten does not use
    cuBLASLt): the values equal eager's addmm and relu, and no Triton kernel runs."""
    from ember_inductor.backend import compile_inference

    fn = lambda x, w, b: torch.relu(torch.nn.functional.linear(x, w, b))  # noqa: E731
    args = [torch.randn(rows, 64, device="cuda", dtype=dtype), torch.randn(128, 64, device="cuda", dtype=dtype),
            torch.randn(128, device="cuda", dtype=dtype)]
    compiled = compile_inference(fn, args)
    for _ in range(2):
        torch.testing.assert_close(compiled(*args), fn(*args))
        args = [torch.randn_like(a) for a in args]
    assert compiled.compiled.kernel_count == 0


_SECOND_PROCESS = """
import torch
from ember_inductor.backend import compile_inference
x = torch.randn(4096, 1000, device="cuda")
f = compile_inference(lambda x: torch.softmax(x, -1) * 2, [x])
torch.testing.assert_close(f(x), torch.softmax(x, -1) * 2)
"""


def test_second_process_reuses_sources_and_autotuning(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    env["EMBER_CACHE_DIR"] = str(tmp_path)
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _SECOND_PROCESS], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert glob.glob(str(tmp_path / "triton" / "*.py"))
        assert glob.glob(str(tmp_path / "triton" / "*.json"))


def test_workers_build_the_c_launcher(tmp_path, monkeypatch) -> None:
    from triton.runtime import driver

    from ember_inductor.codegen.triton_backend import generate_triton
    from ember_inductor.codegen.triton_compile import Job, WorkerPool
    from ember_inductor.codegen.triton_runtime import kernel_path, write_kernel
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "ember"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    x = torch.randn(64, 32)
    (source, kernel), = generate_triton(lambda t: torch.softmax(t, -1) * 2, [x]).values()
    key = write_kernel(source)
    target = driver.active.get_current_target()
    cfg = kernel.configs()[0]
    pool = WorkerPool(1)
    try:
        results = pool.run([Job(kernel_path(key), kernel.name, kernel.signature(), cfg.kwargs(), cfg.num_warps,
                               cfg.num_stages, target, launcher=True)])
    finally:
        pool.close()
    assert results[0][1] is None and results[0][0]
    assert glob.glob(str(tmp_path / "triton" / "*" / "__triton_launcher*.so"))


_OUT_OF_RANGE = """
import torch, torch.nn.functional as F
from ember_inductor.backend import compile_inference
w = torch.randn(5, 8, device="cuda")
compiled = compile_inference(lambda w, i: F.embedding(i, w) + 1, [w, torch.tensor([1, 4], device="cuda")])
assert torch.equal(compiled(w, torch.tensor([1, 4], device="cuda")), F.embedding(torch.tensor([1, 4], device="cuda"), w) + 1)
print("in range: ok", flush=True)
compiled(w, torch.tensor([1, 9], device="cuda")).sum().item()
print("out of range: no error")
"""


def test_an_index_out_of_range_is_a_device_assert() -> None:
    """As eager on CUDA: a device-side assert (in a child process, whose CUDA context it ends)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", _OUT_OF_RANGE], env=env, capture_output=True, text=True,
                          timeout=300)
    assert "in range: ok" in proc.stdout, proc.stderr[-3000:]
    assert proc.returncode != 0 and "out of range: no error" not in proc.stdout
    assert "index out of bounds" in proc.stderr or "device-side assert" in proc.stderr, proc.stderr[-3000:]


def test_generate_with_a_padded_mask_stays_compiled(caplog: pytest.LogCaptureFixture) -> None:
    """HF GPT-2's ``generate()`` with a left-padded attention mask: the decoding graph's mask
    feeds CUDA's memory-efficient attention, whose bias must have outer strides that are
    multiples of 8 (ember_inductor.attention_bias). With a dense bias the compiled graph failed
    on its first call at every length not a multiple of 8, ran with aten, and after eight
    lengths the decoding steps ran eagerly. Tokens equal eager's, and nothing falls back."""
    import logging

    import ember
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_positions=128)
    model = transformers.GPT2LMHeadModel(config).eval().cuda()
    ids = torch.randint(0, 100, (2, 12), device="cuda")
    mask = torch.ones_like(ids)
    mask[1, :3] = 0

    def generate() -> torch.Tensor:
        with torch.no_grad():
            return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=20, min_new_tokens=20,
                                  do_sample=False, pad_token_id=0)
    expected = generate()
    model.forward = ember.compile(model.forward)
    with caplog.at_level(logging.WARNING, logger="ember"):
        got = generate()
    assert torch.equal(got, expected)
    assert not [r for r in caplog.records if r.name.startswith("ember")], [r.getMessage()[:200] for r in caplog.records]
