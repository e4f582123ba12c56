"""Generated Triton kernels run in Triton's interpreter on CPU tensors, against eager.

The kernels are the ones a GPU would run (``EMBER_INDUCTOR_KERNELS=triton`` makes the backend
generate Triton for CPU tensors); only the launch differs.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from triton_checks import interpreter_only  # noqa: E402

interpreter_only()
pytestmark = pytest.mark.usefixtures("triton_kernels")

from ember_inductor.codegen import triton as triton_codegen  # noqa: E402
from triton_cases import case_ids, get, inputs_on  # noqa: E402
from triton_checks import check, kernel_source  # noqa: E402

from benchmarks.models import GPT, TinyMLP  # noqa: E402


@pytest.mark.parametrize("case_id", case_ids())
def test_case_matches_eager(case_id: str) -> None:
    _, fn, make = get(case_id)
    check(fn, *inputs_on(make, "cpu"))


def test_transposed_access_uses_2d_tiles() -> None:
    src = kernel_source(check(lambda x: (x.t() * 2 + 1).contiguous(), torch.randn(70, 50)))
    assert "YBLOCK" in src and "[:, None]" in src


def test_tiled_kernels_launch_on_one_grid_axis() -> None:
    """A tile's row and column blocks share grid axis 0: CUDA allows 65535 blocks on axis 1, which
    a channels-last (1, 16, 2048, 2048) image made contiguous (4M columns) would need 65536 of."""
    from ember_inductor.codegen.triton_backend import generate_triton

    x = torch.randn(1, 16, 40, 30).to(memory_format=torch.channels_last)
    (src, kernel), = generate_triton(lambda x: x.contiguous() * 2, [x]).values()
    assert "YBLOCK" in src
    for cfg in kernel.configs():
        meta = cfg.kwargs()
        assert kernel.grid(cfg) == (-(-16 // meta["YBLOCK"]) * -(-1200 // meta["XBLOCK"]), 1, 1)
    check(lambda x: x.contiguous() * 2, x)


def test_pointwise_loops_follow_the_stored_layout() -> None:
    """A pointwise kernel loops in the order of its store: on a channels-last tensor the
    channels run last, so loads and stores are contiguous in one flat loop (logical order would
    put the width last, ``C`` elements apart, and tile)."""
    def norm_relu(x: torch.Tensor, m: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return ((x - m) * r).relu()
    x, m = torch.randn(4, 16, 6, 6).to(memory_format=torch.channels_last), torch.randn(1, 16, 1, 1)
    src = kernel_source(check(norm_relu, x, m, m.abs()))
    assert "YBLOCK" not in src and "tl.load(in_ptr0 + (xindex)" in src, src
    assert "tl.store(out_ptr3 + (xindex)" in src, src


def test_weight_layout_conversion_is_tiled_along_its_short_last_dimension() -> None:
    """A 3x3 convolution weight converted to channels-last and back (a GPU training step does it
    for every weight): a transpose whose last dimension is the kernel's 9 elements. Tiled, both
    the reads and the writes are contiguous along one of the tile's dimensions."""
    w = torch.randn(32, 16, 3, 3)
    to_cl = kernel_source(check(lambda w: w.clone(memory_format=torch.channels_last) * 2, w))
    back = kernel_source(check(lambda w: w.contiguous() + 1, w.to(memory_format=torch.channels_last)))
    assert "YBLOCK" in to_cl and "xnumel = 16" in to_cl, to_cl  # loops in the store's order: channels last
    assert "YBLOCK" in back and "xnumel = 9" in back, back


def test_persistent_and_looped_reductions() -> None:
    persistent = kernel_source(check(lambda x: torch.softmax(x, -1), torch.randn(16, 1000)))
    looped = kernel_source(check(lambda x: torch.softmax(x, -1), torch.randn(2, 10000)))
    assert "for roffset" not in persistent and "tl.sum" in persistent
    assert "for roffset" in looped


def test_cat_of_head_views_loads_without_the_offsets() -> None:
    """The q, k, v gradients concatenated into a qkv gradient (attention's backward): each input
    is read at its index within the input, so the head views' divisions fold away instead of
    carrying the concatenation's offset through them."""
    from ember_inductor.codegen.triton_backend import generate_triton

    def qkv(q, k, v):
        return torch.cat([t.transpose(1, 2).reshape(2, 16, 24) for t in (q, k, v)], -1).view(32, 72)
    args = [torch.randn(2, 3, 16, 8) for _ in range(3)]
    (src, _), = generate_triton(qkv, args).values()
    loads = [line for line in src.splitlines() if "tl.load(" in line]
    assert len(loads) == 3 and not any("-24" in line or "-48" in line for line in loads)
    check(qkv, *args)


def test_cat_of_buffers_reads_them_without_a_modulus() -> None:
    """A cat of buffers along the innermost dimension (densenet's channels-last features: every
    layer concatenates all those before it, up to 25 inputs) reads each input at a linear index,
    with no run-time modulus per element and input on top of the index's own (that extra one
    took densenet121's BN-ReLU kernels to 2.5x torch.compile's GPU time)."""
    from ember_inductor.codegen.triton_backend import generate_triton

    def dense(*xs):
        return torch.relu(torch.cat(xs, -1) + 1)
    args = [torch.randn(32, 24 + 8 * k) for k in range(3)]
    (src, _), = generate_triton(dense, args).values()
    loads = [line for line in src.splitlines() if "tl.load(" in line]
    assert len(loads) == 3 and all(line.count("%") == 1 for line in loads), loads
    check(dense, *args)


def test_column_sums_get_wide_tiles_and_each_configuration_matches() -> None:
    """A sum across rows (a bias gradient) reads a few contiguous elements of every row per
    program: it is offered tiles of 16384 elements (8 columns of 2048 rows on the GPU), and a
    row sum is not. Every configuration of the column sum is run, not only the first."""
    from ember_inductor.codegen.triton_backend import generate_triton
    from ember_inductor.codegen.triton_compile import import_kernel
    from ember_inductor.codegen.triton_runtime import kernel_path, write_kernel

    x = torch.randn(512, 48, generator=torch.Generator().manual_seed(0))
    (src, kernel), = generate_triton(lambda x: x.sum(0), [x]).values()
    (_, row_kernel), = generate_triton(lambda x: x.sum(1), [x]).values()
    assert kernel.outer_reduction and not row_kernel.outer_reduction
    tiles = [dict(c.meta)["XBLOCK"] * dict(c.meta)["RBLOCK"] for c in kernel.configs()]
    assert 16384 in tiles and max(dict(c.meta)["XBLOCK"] * dict(c.meta)["RBLOCK"]
                                  for c in row_kernel.configs()) <= 8192
    fn = import_kernel(kernel_path(write_kernel(src)), kernel.name)
    for cfg in kernel.configs():
        out = torch.full((48,), float("nan"))
        fn[kernel.grid(cfg)](x, out, **cfg.kwargs())
        # 512 float32 terms added in another order than eager's: a few 1e-5 apart
        torch.testing.assert_close(out, x.sum(0), rtol=1e-5, atol=1e-4, msg=lambda m: f"{cfg}: {m}")


def test_softmax_reads_its_input_once_when_persistent() -> None:
    src = kernel_source(check(lambda x: torch.softmax(x, -1), torch.randn(16, 512)))
    body = src[src.index("def triton_red"):]
    assert body.count("tl.load(") == 1


def test_kernels_are_named_by_the_ops_they_compute() -> None:
    """What profilers and tracebacks show: the kind of kernel, then the aten ops whose buffers it
    computes, the graph's outputs included."""
    def norm_then_gelu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (64,), w, b)) * 2
    src = kernel_source(check(norm_then_gelu, torch.randn(8, 64), torch.randn(64), torch.randn(64)))
    names = [line.split("(")[0][4:] for line in src.splitlines() if line.startswith("def triton_")]
    assert names and all(n.startswith(("triton_red_", "triton_poi_")) for n in names), names
    assert any("_var" in n for n in names) and names[-1].endswith("_mul"), names  # triton_red_var_mul


def test_int64_indexing_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(triton_codegen, "INT32_MAX", 1000)
    src = kernel_source(check(lambda x: (x.sin() + 1, x.sum(1)), torch.randn(40, 60)))
    assert ".to(tl.int64)" in src
    small = kernel_source(check(lambda x: x.cos() + 1, torch.randn(10, 10)))
    assert "program_id(0).to(tl.int64)" not in small


def test_integer_constants_wrap_into_their_type() -> None:
    """A uint8 tensor times -1 multiplies by 255, as eager converts the scalar (index_add's
    decomposition with alpha=-1 did not compile: ``tl.full([], -1, tl.uint8)``)."""
    x = torch.arange(0, 250, 7, dtype=torch.uint8)
    check(lambda x: x * -1 + 300, x)
    check(lambda x: x.to(torch.int8) * 200, x)


def test_half_is_computed_in_float32() -> None:
    src = kernel_source(check(lambda x, y: (x * y).exp(), torch.randn(64).half(), torch.randn(64).half()))
    assert ".to(tl.float32)" in src and ".to(tl.float16)" in src


def test_extern_mm_with_fused_epilogue() -> None:
    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ w + b).sum(1)
    compiled = check(fn, torch.randn(8, 16), torch.randn(16, 12), torch.randn(12))
    assert compiled.compiled.kernel_count >= 1


@pytest.mark.parametrize("model_fn,make_input", [
    (lambda: TinyMLP(), lambda: torch.randn(1, 64)),
    (lambda: GPT(vocab=64, d=32, heads=2, layers=1, max_seq=16), lambda: torch.randint(0, 64, (2, 16))),
], ids=["tiny_mlp", "gpt"])
def test_small_model_forward(model_fn, make_input) -> None:
    ember = pytest.importorskip("ember")
    torch.manual_seed(0)
    model = model_fn().eval()
    compiled = ember.compile(model, backend="inductor")
    with torch.no_grad():
        for _ in range(2):
            x = make_input()
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def test_compiled_graph_round_trip_through_its_artifact() -> None:
    """What the plan cache stores for Triton kernels loads them again (sources from the cache)."""
    import pickle

    from ember_aot.plan_cache import dumps
    from ember_inductor.compile_fx import load_compiled_graph

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x.sin(), -1) + 1

    x = torch.randn(8, 40)
    compiled = check(fn, x).compiled
    loaded = load_compiled_graph(pickle.loads(dumps(compiled.artifact())))
    assert loaded.kernel_count == compiled.kernel_count
    torch.testing.assert_close(loaded(x)[0], fn(x))


def test_indirect_indices_are_asserted_in_bounds() -> None:
    """Triton's interpreter ignores ``tl.device_assert`` (it runs without ``debug``), so the
    generated code is checked: the condition and the lanes it covers; none for an arange."""
    w = torch.randn(5, 8)
    src = kernel_source(check(lambda w, i: torch.nn.functional.embedding(i, w) + 1, w, torch.tensor([[1, 4, 0]])))
    assert "tl.device_assert(((0 <= ind2) & (ind2 < 5)) | ~(xmask)" in src
    assert "tl.where(ind2 < 0" not in src  # embedding rejects negative ids, as eager
    src = kernel_source(check(lambda w, i: w[i] + 1, w, torch.tensor([1, -1])))
    assert "tl.where(ind2 < 0, ind2 + 5, ind2)" in src and "tl.device_assert(" in src
    assert "tl.device_assert" not in kernel_source(check(lambda w: w[torch.arange(3)] + 1, w))


def test_a_saved_autotuning_choice_is_kept_only_for_the_same_scheme_and_configurations(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A choice saved before the timing changed (``AUTOTUNE_SCHEME``), or made among other
    configurations (a kernel's source may stay byte for byte while its configurations grow),
    is tuned again; one saved by this scheme among these configurations is compiled alone."""
    import json

    from ember_inductor.codegen.triton_configs import LaunchConfig
    from ember_inductor.codegen.triton_runtime import AUTOTUNE_SCHEME, TritonLauncher

    configs = [LaunchConfig((("XBLOCK", 1), ("RBLOCK", 2048)), 8), LaunchConfig((("XBLOCK", 8), ("RBLOCK", 2048)), 8)]
    launcher = TritonLauncher("k", "fn", {"in_ptr0": "*fp32"}, configs, [(1, 1, 1)] * 2, [True])
    saved = tmp_path / "choice.json"
    monkeypatch.setattr(launcher, "_tuning_path", lambda: str(saved))
    choice = {"meta": [["XBLOCK", 8], ["RBLOCK", 2048]], "num_warps": 8, "num_stages": 1}
    saved.write_text(json.dumps(choice))  # the old format: no scheme
    assert launcher.pending_compiles() == [0, 1]
    saved.write_text(json.dumps({**choice, "scheme": AUTOTUNE_SCHEME, "offered": launcher._offered()[:1]}))
    assert launcher.pending_compiles() == [0, 1]
    saved.write_text(json.dumps({**choice, "scheme": AUTOTUNE_SCHEME, "offered": launcher._offered()}))
    assert launcher.pending_compiles() == [1] and launcher.choice == 1
