"""The wrapper's logic on CPU, with a fake recorder: copies, address checks, output policy, fallbacks."""
from __future__ import annotations

import logging

import pytest
import torch

from ember_cudagraphs import CudaGraphed, wrap
from fake_recorder import FakeRecorder

LOG = "ember.cudagraphs"


def _linear(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (torch.relu(x @ w) + 1,)


def _wrapped(fn=_linear, **kw) -> tuple[CudaGraphed, FakeRecorder]:
    rec = FakeRecorder()
    w = wrap(fn, recorder=rec, **kw)
    assert isinstance(w, CudaGraphed)
    return w, rec


def _recordings(f: CudaGraphed) -> list:
    return [r for state in f._states.values() for r in state.recordings]


def test_warmup_then_record_then_replay_match_eager():
    f, rec = _wrapped()
    w = torch.nn.Parameter(torch.randn(8, 4))
    xs = [torch.randn(3, 8) for _ in range(5)]
    with torch.no_grad():
        for x in xs:
            torch.testing.assert_close(f(x, w)[0], _linear(x, w)[0])
    assert (rec.warmups, rec.captures, rec.replays) == (1, 1, 4)
    assert f.graph_count() == 1


def test_parameters_read_in_place_and_moving_inputs_copied():
    f, rec = _wrapped()
    w = torch.nn.Parameter(torch.randn(8, 4))
    keep = [torch.randn(3, 8) for _ in range(3)]  # all alive: three addresses
    with torch.no_grad():
        for x in keep:
            f(x, w)
    plan = _recordings(f)[0].inputs
    assert 0 in plan.buffers and 1 not in plan.buffers and plan.stable == [1]


def test_kept_output_is_never_overwritten():
    f, rec = _wrapped()
    w = torch.randn(8, 4)
    x1, x2, x3 = (torch.randn(3, 8) for _ in range(3))
    with torch.no_grad():
        f(x1, w)                      # warm-up
        y1 = f(x1, w)[0]              # recorded, kept
        y2 = f(x2, w)[0]              # y1 alive: another replica
        view = y2[1]                  # a view keeps y2's memory in use too
        del y2
        y3 = f(x3, w)[0]
    torch.testing.assert_close(y1, _linear(x1, w)[0])
    torch.testing.assert_close(view, _linear(x2, w)[0][1])
    torch.testing.assert_close(y3, _linear(x3, w)[0])
    assert rec.captures == 3
    del y1, view, y3
    with torch.no_grad():
        f(x1, w)
    assert rec.captures == 3  # free again: replayed, not recorded


def test_replicas_exhausted_runs_eagerly_with_one_warning(caplog):
    f, rec = _wrapped(max_replicas=2)
    w = torch.randn(8, 4)
    xs = [torch.randn(3, 8) for _ in range(6)]
    with torch.no_grad(), caplog.at_level(logging.WARNING, LOG):
        outs = [f(x, w)[0] for x in xs]
    for x, y in zip(xs, outs):
        torch.testing.assert_close(y, _linear(x, w)[0])
    assert rec.captures == 2 and f.stats["eager"] == 3
    assert sum("still in use" in r.getMessage() for r in caplog.records) == 1


def _ptrs_equal(tensors: list, ptrs: list, indices: list) -> bool:
    """torch's C++ address check of CUDA builds (``_tensors_data_ptrs_at_indices_equal``), in Python."""
    assert isinstance(tensors, list) and isinstance(ptrs, list) and isinstance(indices, list)
    return all(tensors[i].data_ptr() == ptrs[i] for i in indices)


@pytest.fixture(params=["per input", "bulk"])
def address_check(request, monkeypatch):
    """Run with the per-input address check and with the bulk one CUDA builds of torch have."""
    from ember_cudagraphs import inputs
    monkeypatch.setattr(inputs, "_PTRS_EQUAL", _ptrs_equal if request.param == "bulk" else None)


def test_parameter_moved_is_rerecorded_in_place(address_check):
    f, rec = _wrapped()
    w = torch.nn.Parameter(torch.randn(8, 4))
    x = torch.randn(3, 8)
    with torch.no_grad():
        f(x, w)
        f(x, w)
        w.data = torch.randn(8, 4)    # new address
        torch.testing.assert_close(f(x, w)[0], _linear(x, w)[0])
        torch.testing.assert_close(f(x, w)[0], _linear(x, w)[0])
    assert rec.captures == 2
    assert 1 in _recordings(f)[0].inputs.stable


def test_input_that_moves_is_copied_from_then_on(address_check):
    f, rec = _wrapped()
    w = torch.randn(8, 4)
    x = torch.randn(3, 8)
    with torch.no_grad():
        f(x, w)
        f(x, w)                       # same address as warm-up: read in place
        others = [torch.randn(3, 8) for _ in range(4)]
        for o in others:
            torch.testing.assert_close(f(o, w)[0], _linear(o, w)[0])
    assert rec.captures == 2          # one re-record, then copies


def test_expanded_input_gets_a_compact_static_buffer():
    f, rec = _wrapped(fn=lambda x: (x * 2,))
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(1, 5).expand(4, 5)
            y = f(x)[0]
            torch.testing.assert_close(y, x * 2)


def test_output_aliasing_an_input_is_a_view_of_the_callers_tensor():
    f, rec = _wrapped(fn=lambda x, y: (x.view(-1), x + y))
    with torch.no_grad():
        for _ in range(3):
            x, y = torch.randn(2, 3), torch.randn(2, 3)
            a, b = f(x, y)
            assert a.data_ptr() == x.data_ptr()
            torch.testing.assert_close(b, x + y)


def test_input_returned_as_is_comes_back_as_the_callers_tensor():
    w = torch.nn.Parameter(torch.randn(8, 4))
    f, rec = _wrapped(fn=lambda x, w: (x @ w, w, x))   # a training forward returns what it saves
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(3, 8)
            out, w_out, x_out = f(x, w)
            assert w_out is w and x_out is x
            torch.testing.assert_close(out, x @ w)
    assert rec.captures == 2  # x moves: re-recorded once with x copied into a static buffer


def test_nested_outputs_and_constants():
    f, rec = _wrapped(fn=lambda x: {"a": x + 1, "b": [x * 2, None, 3]})
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4)
            out = f(x)
            torch.testing.assert_close(out["a"], x + 1)
            torch.testing.assert_close(out["b"][0], x * 2)
            assert out["b"][1:] == [None, 3]


def test_each_signature_gets_its_own_graph():
    f, rec = _wrapped()
    w = torch.randn(8, 4)
    with torch.no_grad():
        for n in (3, 5, 3, 5, 3):
            x = torch.randn(n, 8)
            torch.testing.assert_close(f(x, w)[0], _linear(x, w)[0])
    assert rec.captures == 2 and f.graph_count() == 2


def test_input_written_during_warmup_runs_eagerly(caplog):
    def bump(x: torch.Tensor) -> tuple[torch.Tensor]:
        x.add_(1)
        return (x * 2,)
    f, rec = _wrapped(fn=bump)
    x = torch.zeros(3)
    with torch.no_grad(), caplog.at_level(logging.WARNING, LOG):
        for _ in range(3):
            f(x)
    torch.testing.assert_close(x, torch.full((3,), 3.0))
    assert rec.captures == 0
    assert sum("writes into input 0" in r.getMessage() for r in caplog.records) == 1


def test_capture_error_falls_back_with_the_reason(caplog):
    rec = FakeRecorder(capture_error=RuntimeError("operation not permitted when stream is capturing"))
    f = wrap(_linear, recorder=rec)
    w = torch.randn(8, 4)
    with torch.no_grad(), caplog.at_level(logging.WARNING, LOG):
        for _ in range(4):
            x = torch.randn(3, 8)
            torch.testing.assert_close(f(x, w)[0], _linear(x, w)[0])
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 1 and "not permitted when stream is capturing" in msgs[0]


def test_calls_recording_autograd_run_eagerly():
    f, rec = _wrapped()
    w = torch.randn(8, 4, requires_grad=True)
    x = torch.randn(3, 8)
    y = f(x, w)[0]
    y.sum().backward()
    assert w.grad is not None and rec.captures == 0


def test_static_reason_without_cuda_returns_fn_itself(caplog):
    with caplog.at_level(logging.WARNING, LOG):
        out = wrap(_linear, [torch.randn(3, 8)])
    if torch.cuda.is_available():
        assert out is _linear and "cpu tensor" in caplog.text
    else:
        assert out is _linear and "needs a CUDA device" in caplog.text


def test_consumer_of_an_alternating_producer_keeps_one_recording_per_address():
    rec = FakeRecorder()
    produce = wrap(lambda x: (x * 2,), recorder=rec)
    consume = wrap(lambda h, w: (h @ w,), recorder=rec)
    w = torch.randn(4, 4)
    kept = None
    with torch.no_grad():
        for _ in range(8):
            x = torch.randn(3, 4)
            (h,) = produce(x)
            (out,) = consume(h, w)
            torch.testing.assert_close(out, (x * 2) @ w)
            kept = h  # alive during the next call: the producer alternates between two replicas
    assert produce.stats["captures"] == 2 and consume.stats["captures"] == 2
    state = next(iter(consume._states.values()))
    assert state.rerecords == 0 and all(0 in r.inputs.stable for r in state.recordings)
    del kept
