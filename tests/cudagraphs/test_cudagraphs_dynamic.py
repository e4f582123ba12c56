"""Graphs with symbolic sizes under CUDA graphs (issue 25), on CPU with the fake recorder:
recorded per concrete shape, a bounded number of shapes, one memory pool shared safely."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
import torch

from ember_cudagraphs import CudaGraphed, wrap
from ember_cudagraphs.backend import aot_backend
from ember_cudagraphs.wrapper import has_symbolic_sizes, wrap_compiler
from fake_recorder import FakeRecorder

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "aot"))
from dynamic_helpers import compare_sizes, dynamic_graph  # noqa: E402

LOG = "ember.cudagraphs"


def _fn(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (torch.relu(x @ w) + 1,)


def _per_shape(**kw) -> tuple[CudaGraphed, FakeRecorder]:
    rec = FakeRecorder()
    f = wrap(_fn, recorder=rec, **kw)
    assert isinstance(f, CudaGraphed)
    return f, rec


def test_each_shape_recorded_once_in_one_shared_pool():
    f, rec = _per_shape()
    w = torch.nn.Parameter(torch.randn(8, 4))
    with torch.no_grad():
        for _ in range(3):
            for n in (3, 5, 7):
                x = torch.randn(n, 8)
                torch.testing.assert_close(f(x, w)[0], _fn(x, w)[0])
    assert rec.captures == 3 and f.graph_count() == 3
    assert rec.pools[0] is not None and all(p is rec.pools[0] for p in rec.pools)


def test_shapes_beyond_the_bound_run_without_graphs_with_one_warning(caplog):
    f, rec = _per_shape(max_shapes=2)
    w = torch.randn(8, 4)
    with torch.no_grad(), caplog.at_level(logging.WARNING, LOG):
        for _ in range(3):
            for n in (3, 5, 7, 9):
                x = torch.randn(n, 8)
                torch.testing.assert_close(f(x, w)[0], _fn(x, w)[0])
    assert rec.captures == 2 and len(f._states) == 2
    assert caplog.text.count("more than 2 input shapes") == 1


def test_earlier_recording_not_replayed_while_a_later_ones_outputs_live():
    f, rec = _per_shape()
    w = torch.nn.Parameter(torch.randn(8, 4))
    a, b = torch.randn(3, 8), torch.randn(5, 8)
    with torch.no_grad():
        f(a, w), f(a, w)              # shape 3: warm-up, recorded in the shared pool
        f(b, w)
        kept = f(b, w)[0]             # shape 5: recorded in the shared pool, output kept
        expected = kept.clone()
        out = f(a, w)[0]              # shape 3's recording could write into kept's memory
    assert rec.captures == 3 and rec.pools[-1] is None  # a replica in a pool of its own
    torch.testing.assert_close(out, _fn(a, w)[0])
    torch.testing.assert_close(kept, expected)
    del kept
    with torch.no_grad():
        f(a, w)                       # free again: the shared recording or the replica replays
    assert rec.captures == 3


def test_wrap_compiler_trusts_the_signature_of_static_graphs_only():
    rec = FakeRecorder()
    compile_graph = wrap_compiler(lambda gm, ex: gm.forward, recorder=rec)
    x = torch.randn(4, 3)
    static = compile_graph(torch.fx.symbolic_trace(lambda x: (x * 2,)), [x])
    gm = dynamic_graph(lambda x: (x * 2,), x)
    vals = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    assert has_symbolic_sizes(vals) and not has_symbolic_sizes([x, 3])
    dynamic = compile_graph(gm, vals)
    assert static.trust_signature and not dynamic.trust_signature


def _traces_once_and_records_per_shape() -> tuple[int, int, int]:
    rec = FakeRecorder()

    def fn(x, w):
        return (x.view(x.size(0) * 2, -1) @ w).tanh().sum(1)

    sizes = [5, 3, 5, 3, 7, 7, 7]
    compiled = compare_sizes(fn, lambda n: [torch.randn(n, 4), torch.randn(2, 6, requires_grad=True)],
                             sizes, aot_backend(rec))
    return len(compiled.plans), rec.captures, rec.replays


def test_backend_traces_once_and_records_per_shape_forward_and_backward():
    pytest.importorskip("ember_aot.symbolic")
    from ember_aot.symbolic import SYMBOLIC_TRACING
    if not SYMBOLIC_TRACING:  # failed on the GPU machine's torch 2.11 (2026-11-27), as designed
        pytest.skip("one symbolic plan needs symbolic tracing (torch 2.13); older torch compiles per shape")
    # In a fresh interpreter: a recording is replayed only once nothing holds the previous call's
    # outputs (the gradient taken over by ``w.grad``), and in a long test process something run
    # earlier has, once, kept one alive, costing a recording more (cause not found; the count is
    # the point of this test, so it is taken where nothing else ran).
    code = ("import sys; sys.path[:0] = sys.argv[1:]; import test_cudagraphs_dynamic as t; "
            "print(*t._traces_once_and_records_per_shape())")
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", code, here, os.path.join(os.path.dirname(here), "aot")],
                         capture_output=True, text=True, check=True).stdout
    plans, captures, replays = map(int, out.split()[-3:])
    assert plans == 1  # one symbolic plan
    # per shape (5, 3, 7) and per graph (forward, backward): a warm-up then a recording
    assert captures == 6 and replays >= 6


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_per_shape_recordings_share_a_pool_and_keep_live_outputs():
    w = torch.nn.Parameter(torch.randn(8, 4, device="cuda"))
    f = wrap(_fn, [torch.randn(3, 8, device="cuda"), w])
    assert isinstance(f, CudaGraphed) and not f.trust_signature  # recorded per signature
    a, b = torch.randn(3, 8, device="cuda"), torch.randn(5, 8, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            for x in (a, b):
                torch.testing.assert_close(f(x, w)[0], _fn(x, w)[0])
        kept = f(b, w)[0]
        expected = kept.clone()
        for _ in range(3):
            torch.testing.assert_close(f(a, w)[0], _fn(a, w)[0])
    torch.testing.assert_close(kept, expected)
    recordings = [r for s in f._states.values() for r in s.recordings]
    assert sum(r.shared for r in recordings) == 2 and f.stats["captures"] >= 2


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_backend_trains_a_dynamic_graph_at_many_sizes():
    pytest.importorskip("ember_aot.symbolic")
    from ember_aot.symbolic import SYMBOLIC_TRACING
    if not SYMBOLIC_TRACING:
        pytest.skip("symbolic tracing is checked on torch 2.13; older torch compiles per shape")
    def fn(x, w):
        return (x.view(x.size(0) * 2, -1) @ w).tanh().sum(1)

    def inputs(n):
        return [torch.randn(n, 4, device="cuda"), torch.randn(2, 6, device="cuda", requires_grad=True)]

    compiled = compare_sizes(fn, inputs, [5, 3, 5, 3, 7, 7, 7, 9], aot_backend(), tol=1e-4)
    assert len(compiled.plans) == 1
