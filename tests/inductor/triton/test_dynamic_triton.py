"""Dynamic shapes in the Triton kernels, run in Triton's interpreter: the sizes are kernel
arguments (``xnumel``/``rnumel`` computed from them) and the grid is computed from them at each
launch, so one compiled graph serves every size."""
from __future__ import annotations

import os
import re
import sys

import pytest
import torch

from triton_checks import interpreter_only  # noqa: E402

interpreter_only()
pytestmark = pytest.mark.usefixtures("triton_kernels")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from inductor_dynamic_helpers import compile_symbolic, run_sizes  # noqa: E402

SIZES = [(3, 7), (2, 5), (4, 9), (5, 2), (2, 33), (3, 130)]


def _pointwise(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * y + x[:, 1:].sum() * 0  # a broadcast, and a slice of a symbolic dim


def _reductions(x: torch.Tensor) -> tuple:
    return torch.softmax(x, -1), x.mean(0), x.amax(-1)


def test_pointwise_with_symbolic_numel() -> None:
    x, y = torch.randn(3, 7), torch.randn(7)
    _, compiled = compile_symbolic(_pointwise, x, y)
    assert re.search(r"xnumel = .*s\d+", compiled.source)
    assert re.search(r"def triton_\w+\(.*\bs\d+,", compiled.source)  # sizes are arguments
    cases = [(torch.randn(b, t), torch.randn(t)) for b, t in SIZES]
    assert run_sizes(compiled, _pointwise, cases) == 0


def test_reductions_with_symbolic_lengths() -> None:
    _, compiled = compile_symbolic(_reductions, torch.randn(3, 7))
    assert re.search(r"rnumel = s\d+", compiled.source)
    assert "for roffset in range(0, rnumel, RBLOCK)" in compiled.source  # looped: any length
    assert run_sizes(compiled, _reductions, [(torch.randn(b, t),) for b, t in SIZES]) == 0


def test_symbolic_row_length_runs_whole_rows_where_they_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reduction over a symbolic length whose example fits in registers gets both forms in one
    function: rows up to the example's power of two are reduced whole (one read of the input),
    longer ones by the looped form; each size bucket picks among the configurations valid for it."""
    from ember_inductor.codegen.triton_runtime import TritonLauncher

    def softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1)

    _, compiled = compile_symbolic(softmax, torch.randn(4, 100))
    assert "if PERSISTENT:" in compiled.source
    assert "for roffset in range(0, rnumel, RBLOCK)" in compiled.source  # the looped form too
    forms: list[int] = []
    fitting = TritonLauncher._fitting

    def spy(self: TritonLauncher, rows: int, aligned: bool) -> list[int]:
        out = fitting(self, rows, aligned)
        forms.append(self.configs[out[0]].kwargs()["PERSISTENT"])
        return out
    monkeypatch.setattr(TritonLauncher, "_fitting", spy)
    sizes = [(4, 100), (3, 128), (5, 7), (2, 129), (3, 1000)]
    cases = [(torch.randn(b, t).masked_fill(torch.rand(b, t) < 0.2, float("-inf")),) for b, t in sizes]
    assert run_sizes(compiled, softmax, cases) == 0
    assert forms == [1, 1, 1, 0, 0]  # up to 128 (the example's 100 rounded up) whole, then looped


def test_sizes_that_were_multiples_of_16_are_assumed_so_only_where_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sizes that were multiples of 16 in the example are compiled as such (Triton vectorizes
    loads along them, as its own launcher specialises); a call whose sizes are not gets a
    configuration compiled without the assumption."""
    from ember_inductor.codegen.triton_runtime import TritonLauncher

    def fn(x: torch.Tensor) -> tuple:
        return torch.softmax(x, -1), torch.sigmoid(x) * 2

    _, compiled = compile_symbolic(fn, torch.randn(32, 64))
    launchers = [ln for _, _, ln in compiled._keepalive.kernels.values()]
    assert launchers and all(ln.divisible for ln in launchers)
    for ln in launchers:  # compiled both ways: assuming multiples of 16, and not
        assert any(c.divisible for c in ln.configs) and any(not c.divisible for c in ln.configs)
    assumed: list[bool] = []
    fitting = TritonLauncher._fitting

    def spy(self: TritonLauncher, rows: int, aligned: bool) -> list[int]:
        out = fitting(self, rows, aligned)
        assumed.append(bool(self.configs[out[0]].divisible))
        return out
    monkeypatch.setattr(TritonLauncher, "_fitting", spy)
    cases = [(torch.randn(b, t),) for b, t in [(32, 64), (16, 48), (5, 64), (32, 7)]]
    assert run_sizes(compiled, fn, cases) == 0
    per_call = [assumed[k:k + len(launchers)] for k in range(0, len(assumed), len(launchers))]
    assert per_call == [[True] * len(launchers)] * 2 + [[False] * len(launchers)] * 2


def test_an_index_with_a_max_of_sizes_prints_as_tl_maximum() -> None:
    """torch's SDPA pads an attention mask to a multiple of 8 and slices it back (the padded
    stride is ``max(1, ...)`` of the sizes); such an index is printed with ``tl.maximum``, so the
    graph stays symbolic instead of being compiled per shape (GPT-2's decoding on the GPU)."""
    import torch.nn.functional as F

    def fn(x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        return F.pad(x, (0, 8 - (n + 1) % 8 + 1))[..., :n].exp() + 1

    _, compiled = compile_symbolic(fn, torch.randn(3, 13))
    assert "tl.maximum(" in compiled.source
    assert run_sizes(compiled, fn, [(torch.randn(b, n),) for b, n in [(3, 13), (2, 7), (4, 21)]]) == 0


def _size_types(fn, *inputs) -> set[str]:
    from ember_inductor import symbolic
    from ember_inductor.codegen.triton_backend import TritonBackend
    from ember_inductor.graph import GraphLowering
    from ember_inductor.scheduler import Scheduler
    from inductor_dynamic_helpers import symbolic_graph

    gm = symbolic_graph(fn, *inputs)
    with symbolic.using_hints(symbolic.shape_env_of(gm)):
        kernels = [k for _, k, _ in TritonBackend().generate(Scheduler(GraphLowering(gm).run()))]
        return {t for k in kernels for name, t in k.signature().items() if name in k.size_params}


def test_sizes_are_32_bit_arguments_where_indices_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where every extent is guarded to fit 32 bits the sizes are ``i32`` arguments, so that
    ``xnumel`` and the masks are 32-bit as in the specialised kernel (with ``i64`` sizes every
    mask compared 64-bit); else ``i64``."""
    from ember_inductor.codegen import triton as triton_codegen

    def chain(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 1.1 + 0.1) - torch.sigmoid(x) * 0.5
    assert _size_types(chain, torch.randn(40, 60)) == {"i32"}
    monkeypatch.setattr(triton_codegen, "INT32_MAX", 1000)
    assert _size_types(chain, torch.randn(40, 60)) == {"i64"}
