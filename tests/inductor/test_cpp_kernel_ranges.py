"""Compiled CPU calls in torch.profiler traces: each C++ kernel is a range named after what it
computes, beside the aten ops the wrapper calls; results are the same with and without the profiler."""
import torch

import ember


def _profiled_names(fn, *args) -> tuple[list[str], object]:
    with torch.profiler.profile() as prof:
        out = fn(*args)
    return [e.name for e in prof.events()], out


def test_cpp_kernels_are_named_ranges_in_a_trace():
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.LayerNorm(32), torch.nn.GELU())
    compiled = ember.compile(model, backend="inductor", options={"eager_fallback": False})
    x = torch.randn(8, 32)
    with torch.no_grad():
        expected = model(x)
        torch.testing.assert_close(compiled(x), expected)  # compiled, and its wrapper settled
        names, out = _profiled_names(compiled, x)
        torch.testing.assert_close(out, expected)
        torch.testing.assert_close(compiled(x), expected)  # the profiler off again
    kernels = [n for n in names if n.startswith("cpp_")]
    assert kernels and all(n.startswith(("cpp_red_", "cpp_poi_")) for n in kernels), names
    assert any(n.startswith("ember: Sequential graph") for n in names), names
    assert "aten::addmm" in names or "aten::linear" in names or "aten::mm" in names, names


def test_a_cached_plan_keeps_the_names(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    x = torch.randn(64, 16)
    for _ in range(2):  # the second compile loads the stored plan
        ember.reset()
        compiled = ember.compile(lambda t: (t.sin() * 2).sum(1), backend="inductor", options={"eager_fallback": False})
        compiled(x)
        names, out = _profiled_names(compiled, x)
        torch.testing.assert_close(out, (x.sin() * 2).sum(1))
        assert any(n.startswith("cpp_red_") for n in names), names
