"""Runtime behaviour of backend onnxrt: sessions per signature, options, grad policy, cache."""
from __future__ import annotations

import logging
import os
import stat
import threading

import pytest
import torch
from ember import EmberError
from onnxrt_helpers import all_in_onnxruntime, check, compile_fn, leaf_graph

from ember_onnxrt import cache, converter
from ember_onnxrt.backend import onnxrt


def _fn(x, w):
    return torch.tanh(x @ w) * 2


def _args(n=4):
    return [torch.randn(n, 4), torch.randn(4, 4)]


def test_one_session_per_signature():
    compiled = compile_fn(_fn, _args())
    for _ in range(3):
        a = _args()
        torch.testing.assert_close(compiled(*a), _fn(*a))
    assert len(compiled.placements()) == 1
    a = _args(7)  # new shape: one more session
    torch.testing.assert_close(compiled(*a), _fn(*a))
    a = [t.double() for t in _args()]  # new dtype
    torch.testing.assert_close(compiled(*a), _fn(*a))
    assert len(compiled.placements()) == 3 and all_in_onnxruntime(compiled)


def test_non_contiguous_inputs():
    compiled = compile_fn(_fn, _args())
    x, w = torch.randn(4, 8)[:, ::2], torch.randn(4, 4).t()
    torch.testing.assert_close(compiled(x, w), _fn(x, w))


def test_outputs_are_fresh_tensors():
    compiled = compile_fn(_fn, _args())
    a = _args()
    first = compiled(*a)
    second = compiled(*a)
    assert first.data_ptr() != second.data_ptr()
    torch.testing.assert_close(first, second)


def test_clone_outputs_never_share_the_input_memory():
    """A clone is the identity in ONNX: its output must still be a tensor of its own, whether
    PyTorch writes into it inside the graph or the caller writes into it afterwards."""
    def fn(x):
        v = x.clone()
        v[[0]] = x.sin()[0]
        return v, x.clone(), x.clone()

    x = torch.randn(2, 3)
    before = x.clone()
    compiled = compile_fn(leaf_graph(fn, 1), [x])
    with torch.no_grad():
        v, a, b = compiled(x)
        a.add_(1)
    torch.testing.assert_close(x, before, rtol=0, atol=0)
    torch.testing.assert_close(b, before, rtol=0, atol=0)
    torch.testing.assert_close(a, before + 1)
    torch.testing.assert_close(v, fn(before)[0])


def test_options():
    check(_fn, *_args(), providers=["CPUExecutionProvider"], graph_optimization_level="disable",
          session_options={"intra_op_num_threads": 1}, optimize=False, cache=False)
    with pytest.raises(ValueError, match="unknown onnxrt option"):
        compile_fn(_fn, _args(), no_such_option=1)
    with pytest.raises(ValueError, match="no provider"):
        compile_fn(_fn, _args(), providers=["NoSuchExecutionProvider"])
    with pytest.raises(ValueError, match="SessionOptions has no attribute"):
        compile_fn(_fn, _args(), session_options={"bogus": 1})
    compiled = onnxrt(torch.fx.symbolic_trace(_fn), _args(), mode="max-autotune", options=None)
    a = _args()
    torch.testing.assert_close(compiled(*a), _fn(*a))


def test_grad_inputs_run_eagerly_with_one_warning(caplog):
    compiled = compile_fn(_fn, _args())
    x, w = torch.randn(4, 4), torch.randn(4, 4, requires_grad=True)
    with caplog.at_level(logging.WARNING, logger="ember.onnxrt"):
        out = compiled(x, w)
        compiled(x, w)
    out.sum().backward()
    w2 = w.detach().clone().requires_grad_()
    _fn(x, w2).sum().backward()
    torch.testing.assert_close(w.grad, w2.grad)
    assert len([r for r in caplog.records if "inference-only" in r.getMessage()]) == 1
    with torch.no_grad():  # grad mode off: onnxruntime again
        torch.testing.assert_close(compiled(x, w), _fn(x, w))


def test_grad_inputs_raise_when_asked():
    compiled = compile_fn(_fn, _args(), on_grad="raise")
    with pytest.raises(EmberError, match="inference-only"):
        compiled(torch.randn(4, 4), torch.randn(4, 4, requires_grad=True))
    with torch.inference_mode():
        compiled(torch.randn(4, 4), torch.randn(4, 4, requires_grad=True))


def test_disk_cache(monkeypatch):
    compile_fn(_fn, _args())
    directory = cache.cache_dir()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    (entry,) = directory.glob("*.onnx")
    assert not list(directory.glob(".tmp-*"))

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again despite a cache entry")

    monkeypatch.setattr(converter, "to_onnx", no_conversion)
    check(_fn, *_args())  # served from the cache
    entry.write_bytes(b"truncated")
    monkeypatch.undo()
    os.environ["EMBER_CACHE_DIR"] = str(directory.parent)
    check(_fn, *_args())  # corrupt entry: rebuilt
    assert entry.stat().st_size > 100


def test_cache_refuses_directory_others_can_write(tmp_path, monkeypatch, caplog):
    root = tmp_path / "shared"
    (root / "onnxrt").mkdir(parents=True)
    (root / "onnxrt").chmod(0o777)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(root))
    with caplog.at_level(logging.WARNING, logger="ember.onnxrt"):
        check(_fn, *_args())
    assert "writable by other users" in caplog.text
    assert not list((root / "onnxrt").iterdir())


def test_threads_share_one_compiled_function():
    compiled = compile_fn(_fn, _args())
    inputs = [_args(n) for n in (2, 3, 2, 3, 5, 5)]
    results: dict[int, torch.Tensor] = {}

    def work(i):
        with torch.no_grad():
            results[i] = compiled(*inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, a in enumerate(inputs):
        torch.testing.assert_close(results[i], _fn(*a))
    assert len(compiled.placements()) == 4


def test_empty_outputs_run_in_onnxruntime():
    """A 0-element tensor has a null data pointer, which onnxruntime refuses to bind as an
    output: such outputs are allocated by the backend, never bound to user memory."""
    def fn(x, w):
        return (x @ w).sum(0), x + 1, torch.tanh(x @ w)

    args = [torch.zeros(0, 4), torch.randn(4, 3)]
    compiled = check(fn, *args)
    assert all_in_onnxruntime(compiled)


def test_empty_tensor_through_ember_compile(recwarn):
    import ember

    def fn(x):
        return x.sum(), x.shape, x + 1

    x = torch.zeros(0, 3)
    out, expected = ember.compile(fn, backend="onnxrt")(x), fn(x)
    assert out[1] == expected[1]
    for a, b in ((out[0], expected[0]), (out[2], expected[2])):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b)
    assert not [w for w in recwarn if "ember" in str(w.message)]
