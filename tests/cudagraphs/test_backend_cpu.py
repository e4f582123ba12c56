"""What runs on a CPU-only machine: availability, static checks, fallbacks, inductor's modes."""
from __future__ import annotations

import logging

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import ember
from ember_cudagraphs.checks import device_reason, mutation_reason
from ember_cudagraphs.plugin import _cuda_check

LOG = "ember.cudagraphs"
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")


@no_cuda
def test_backend_reports_itself_unavailable_with_the_reason():
    assert "needs a CUDA device" in _cuda_check()
    with pytest.raises(Exception, match="needs a CUDA device"):
        ember.compile(lambda x: x + 1, backend="cudagraphs")(torch.randn(3))


def test_backend_called_with_cpu_tensors_runs_the_graph_eagerly(caplog):
    from ember_cudagraphs.backend import cudagraphs

    gm = torch.fx.symbolic_trace(lambda x: torch.sin(x) * 2)
    x = torch.randn(4)
    with caplog.at_level(logging.WARNING, LOG):
        fn = cudagraphs(gm, [x])
    torch.testing.assert_close(fn(x), torch.sin(x) * 2)
    assert "without CUDA graphs" in caplog.text


def test_mutation_of_an_input_or_a_view_of_one_is_found():
    def direct(x, y):
        x.add_(y)
        return (x * 2,)

    def through_view(x, y):
        x.view(-1).mul_(2)
        return (x + y,)

    def functional(x, y):
        return (x + y,)

    args = (torch.randn(2, 3), torch.randn(2, 3))
    assert "input 0" in mutation_reason(make_fx(direct)(*args))
    assert "input 0" in mutation_reason(make_fx(through_view)(*args))
    assert mutation_reason(make_fx(functional)(*args)) == ""


def test_device_reason():
    assert device_reason([torch.randn(2), 3]) == "input 0 is a cpu tensor"
    assert device_reason([1, 2.0]) == ""


def _tiny(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x * 2 + 1).sum(-1)


@no_cuda
@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_inductor_modes_with_cuda_graphs_fall_back_on_cpu(mode, caplog):
    fn = ember.compile(_tiny, mode=mode)
    with caplog.at_level(logging.WARNING, LOG):
        for _ in range(3):
            x = torch.randn(4, 8)
            torch.testing.assert_close(fn(x), _tiny(x))
    msgs = [r.getMessage() for r in caplog.records if r.name == LOG]
    assert len(msgs) == 1 and "needs a CUDA device" in msgs[0]


def test_inductor_default_mode_does_not_use_cuda_graphs(caplog):
    fn = ember.compile(_tiny, mode="default")
    with caplog.at_level(logging.WARNING, LOG):
        x = torch.randn(4, 8)
        torch.testing.assert_close(fn(x), _tiny(x))
    assert not [r for r in caplog.records if r.name == LOG]


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="unknown mode"):
        ember.compile(_tiny, mode="fastest")
