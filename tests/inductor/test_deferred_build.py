"""Kernels build on a background thread: compiling a graph returns once its code is generated,
the graph waits for its kernels at the first call, and a failed build is reported there (an
aten fallback with one warning, or an error under strict)."""
from __future__ import annotations

import logging
import threading

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import ember
from ember_inductor import cache
from ember_inductor.codegen.cpp_backend import CppBackend
from ember_inductor.compile_fx import compile_aten_graph


def _aten_graph(fn, *inputs):
    gm = make_fx(fn, tracing_mode="fake")(*inputs)
    return gm, [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]


def test_compile_returns_before_the_kernels_are_built(monkeypatch):
    release, started = threading.Event(), threading.Event()
    prepare = CppBackend.prepare

    def slow_prepare(self, scheduler):
        prepared = prepare(self, scheduler)
        build = prepared.build

        def held_build():
            started.set()
            assert release.wait(30)
            return build()
        prepared.build = held_build
        return prepared

    monkeypatch.setattr(CppBackend, "prepare", slow_prepare)

    def fn(x):
        return (torch.sin(x) * 0.25 + torch.cos(x),)

    x = torch.randn(33)
    compiled = compile_aten_graph(*_aten_graph(fn, x), defer=True)
    assert started.wait(30) and "kernel0" in compiled.source
    release.set()
    torch.testing.assert_close(compiled(x)[0], fn(x)[0])
    assert compiled.artifact() is not None


def _broken_build(monkeypatch):
    def fail(source):
        raise RuntimeError("the C++ compiler is broken")
    monkeypatch.setattr(cache, "load_library", fail)


def _fn(x):
    return torch.tanh(x) * 3 - x.abs() * 0.5


def test_failed_build_runs_the_aten_graph_with_one_warning(monkeypatch, caplog):
    monkeypatch.setenv("EMBER_INDUCTOR_STRICT", "0")
    _broken_build(monkeypatch)
    compiled = ember.compile(_fn, backend="inductor")
    x = torch.randn(7, 5)
    with caplog.at_level(logging.WARNING, logger="ember.inductor"):
        for _ in range(3):
            torch.testing.assert_close(compiled(x), _fn(x))
    warnings = [r for r in caplog.records if "could not compile a graph" in r.getMessage()]
    assert len(warnings) == 1 and "the C++ compiler is broken" in warnings[0].getMessage()


def test_failed_build_raises_at_the_first_call_under_strict(monkeypatch):
    _broken_build(monkeypatch)
    compiled = ember.compile(_fn, backend="inductor")
    with pytest.raises(RuntimeError, match="the C[+][+] compiler is broken"):
        compiled(torch.randn(6, 5))
