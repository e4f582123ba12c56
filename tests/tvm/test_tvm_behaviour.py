"""tvm backend behaviour: parameters changed in place, fallbacks, gradients, options, cache."""
from __future__ import annotations

import logging
import os
import stat

import pytest
import torch
import torch.fx as fx
import torch.nn.functional as F

pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install ember[tvm])")

from ember_tvm.backend import GradientsNotSupported  # noqa: E402
from ember_tvm.backend import tvm as tvm_backend  # noqa: E402
from tvm_helpers import assert_matches, lifted, traced  # noqa: E402


@fx.wrap
def python_only(x):
    """A function TVM cannot import (fx keeps it as one call_function node)."""
    return x * torch.erfc(x)


def test_parameter_changed_in_place_between_calls():
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).eval()
    gm, tensors = lifted(model)
    x = torch.randn(3, 8)
    compiled = tvm_backend(gm, [x, *tensors])
    with torch.no_grad():
        assert_matches(compiled(x, *tensors), (model(x),))
        model[0].weight.mul_(-2.0)
        model[2].bias.add_(1.0)
        assert_matches(compiled(x, *tensors), (model(x),))
    assert compiled.tvm_pieces[0].tvm_signatures == 1  # same build, new weights seen


def test_get_attr_parameters_are_lifted_not_baked_in():
    model = torch.nn.Linear(5, 3).eval()
    gm = fx.symbolic_trace(model)  # parameters as get_attr/call_module, as third parties hand over
    x = torch.randn(2, 5)
    compiled = tvm_backend(gm, [x])
    with torch.no_grad():
        assert_matches(compiled(x), model(x))
        model.weight.zero_()
        assert_matches(compiled(x), model(x))
    assert compiled.tvm_pieces


def test_unsupported_op_stays_in_pytorch(caplog):
    def fn(x, w):
        return (F.relu(python_only(x @ w)) + 1,)
    x, w = torch.randn(4, 6), torch.randn(6, 5)
    with caplog.at_level(logging.WARNING, logger="ember.tvm"):
        compiled = tvm_backend(traced(fn), [x, w])
    with torch.no_grad():
        assert_matches(compiled(x, w), fn(x, w))
    assert len(compiled.tvm_pieces) == 2
    assert caplog.text.count("ops kept in PyTorch") == 1 and "python_only" in caplog.text


def test_graph_mutating_its_input_runs_eagerly(caplog):
    def fn(x, y):
        x.add_(y)
        return (x * 2,)
    x, y = torch.randn(3), torch.randn(3)
    with caplog.at_level(logging.WARNING, logger="ember.tvm"):
        compiled = tvm_backend(traced(fn), [x.clone(), y])
    expected_x = x + y
    got = compiled(x, y)
    torch.testing.assert_close(x, expected_x)
    torch.testing.assert_close(got[0], expected_x * 2)
    assert not compiled.tvm_pieces and "mutates graph input" in caplog.text


def test_inplace_on_intermediates_is_functionalized():
    def fn(x):
        y = x * 2
        y.add_(1)
        z = F.relu(y, inplace=True)
        return (z + y,)
    x = torch.randn(10)
    compiled = tvm_backend(traced(fn), [x])
    with torch.no_grad():
        assert_matches(compiled(x), fn(x))
    assert compiled.tvm_pieces and compiled.tvm_pieces[0].tvm_signatures


def test_wrong_import_is_caught_by_verification(monkeypatch, caplog):
    from ember_tvm import runtime

    real = runtime.VmFunction.__call__
    def off_by_one(self, *args):
        out = real(self, *args)
        return out + 1 if isinstance(out, torch.Tensor) else tuple(t + 1 for t in out)

    monkeypatch.setattr(runtime.VmFunction, "__call__", off_by_one)

    def fn(x):
        return (torch.sin(x),)
    x = torch.randn(6)
    compiled = tvm_backend(traced(fn), [x])
    assert_matches(compiled(x), fn(x))
    assert compiled.tvm_pieces[0].tvm_signatures == 0 and "differs from eager" in caplog.text


def test_returned_view_of_input_is_a_view():
    def fn(x):
        return (x.view(-1), x.sin())
    x = torch.randn(2, 3)
    out = tvm_backend(traced(fn), [x])(x)
    assert out[0].data_ptr() == x.data_ptr()


def test_clone_of_input_written_in_place_leaves_the_input_alone():
    """TVM lowers clone to the identity: the VM handed x's own buffer back, and the setitem kept
    in PyTorch wrote into the caller's x (fuzzer issue 23)."""
    import ember

    def fn(x):
        v5 = x.clone()
        v5[[0]] = x.sin()
        return v5
    x = torch.randn(1, 3)
    before = x.clone()
    with torch.no_grad():
        out = ember.compile(fn, backend="tvm")(x)
    torch.testing.assert_close(x, before, rtol=0, atol=0)
    assert_matches(out, fn(before))


def test_identity_outputs_are_private_buffers():
    """Outputs that TVM computes as the identity are the caller's to write into: neither the
    input nor the other output may change, as in eager."""
    def fn(x):
        return (x.clone(), x.clone(), F.dropout(x.clone(), 0.5, training=False) * 1)
    x = torch.randn(2, 3)
    before = x.clone()
    compiled = tvm_backend(traced(fn), [x])
    with torch.no_grad():
        a, b, c = compiled(x)
        a.add_(1)
        c.mul_(2)
    assert compiled.tvm_pieces and compiled.tvm_pieces[0].tvm_signatures == 1
    torch.testing.assert_close(x, before, rtol=0, atol=0)
    torch.testing.assert_close(b, before, rtol=0, atol=0)
    torch.testing.assert_close(a, before + 1)
    torch.testing.assert_close(c, before * 2)


def test_gradients_fall_back_with_one_warning(caplog):
    def fn(x, w):
        return (x @ w,)
    x, w = torch.randn(2, 3), torch.randn(3, 4, requires_grad=True)
    compiled = tvm_backend(traced(fn), [x, w])
    with caplog.at_level(logging.WARNING, logger="ember.tvm"):
        out = compiled(x, w)[0]
        compiled(x, w)
    out.sum().backward()
    assert w.grad is not None
    assert caplog.text.count("inference-only") == 1
    with torch.no_grad():
        assert not compiled(x, w)[0].requires_grad


def test_gradients_raise_when_asked():
    def fn(x):
        return (x * 2,)
    x = torch.randn(3, requires_grad=True)
    compiled = tvm_backend(traced(fn), [x], options={"fallback_on_grad": False})
    with pytest.raises(GradientsNotSupported):
        compiled(x)
    with torch.inference_mode():
        assert_matches(compiled(x), (x * 2,))


def test_bad_options_raise():
    gm = traced(lambda x: (x + 1,))
    with pytest.raises(ValueError, match="unknown option"):
        tvm_backend(gm, [torch.randn(2)], options={"bogus": 1})
    with pytest.raises(ValueError, match="tuning"):
        tvm_backend(gm, [torch.randn(2)], options={"tuning": "fast"})


def test_disk_cache_is_private_and_reused(private_cache, monkeypatch):
    from ember_tvm import build

    def fn(x):
        return (torch.tanh(x) * 3,)
    x = torch.randn(5, 5)
    tvm_backend(traced(fn), [x])
    folder = private_cache / "tvm"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    entries = list(folder.glob("*.so"))
    assert len(entries) == 1

    def no_build(*args, **kwargs):
        raise AssertionError("built again despite a cache entry")
    monkeypatch.setattr(build, "build", no_build)
    compiled = tvm_backend(traced(fn), [x])
    assert_matches(compiled(x), fn(x))
    assert compiled.tvm_pieces[0].tvm_signatures == 1


def test_corrupt_cache_entry_is_rebuilt(private_cache):
    def fn(x):
        return (torch.cos(x),)
    x = torch.randn(4)
    tvm_backend(traced(fn), [x])
    (entry,) = (private_cache / "tvm").glob("*.so")
    entry.write_bytes(b"not a library")
    compiled = tvm_backend(traced(fn), [x])
    assert_matches(compiled(x), fn(x))
    assert compiled.tvm_pieces[0].tvm_signatures == 1


def test_unsafe_cache_folder_is_not_used(private_cache, caplog):
    (private_cache / "tvm").mkdir(parents=True)
    os.chmod(private_cache / "tvm", 0o777)
    compiled = tvm_backend(traced(lambda x: (x.exp(),)), [torch.randn(3)])
    assert compiled.tvm_pieces[0].tvm_signatures == 1
    assert not list((private_cache / "tvm").glob("*.so")) and "cache disabled" in caplog.text


def test_tuning_without_its_dependencies_says_what_to_install():
    from ember_tvm.options import missing_tuning_modules

    if not missing_tuning_modules():
        pytest.skip("MetaSchedule's dependencies are installed")
    gm = traced(lambda x: (x + 1,))
    with pytest.raises(ValueError, match="apache-tvm\\[popen-pool,meta-schedule\\]"):
        tvm_backend(gm, [torch.randn(2)], options={"tuning": "meta_schedule"})
    compiled = tvm_backend(gm, [torch.randn(2)], mode="max-autotune")  # default schedules instead
    assert compiled.tvm_pieces
