"""0-dim CPU tensor inputs (a step count, a loss scale) of graphs recorded into CUDA graphs.

Graphs are traced with fake CUDA tensors (no GPU needed) to check which inputs move onto the
device; the wrapper's replay of the device copy runs with the fake recorder on CPU.
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from ember_cudagraphs.host_scalars import HostScalars, host_scalar_inputs, on_device
from ember_cudagraphs.wrapper import wrap
from fake_recorder import FakeRecorder


def _trace(fn, *specs):
    """``fn`` traced on fake tensors: specs are (shape, device)."""
    mode = FakeTensorMode()
    with mode:
        args = [torch.empty(shape, device=device) for shape, device in specs]
    return make_fx(fn, tracing_mode="fake")(*args), args


def _scaled(x, w, scale):
    return torch.relu(x @ w) * scale, scale  # the scale returned too (saved for the backward)


def test_scalar_feeding_device_ops_moves_to_the_device():
    gm, args = _trace(_scaled, ((4, 3), "cuda"), ((3, 3), "cuda"), ((), "cpu"))
    assert host_scalar_inputs(gm, args) == [2]
    moved, inputs, device = on_device(gm, args, [2])
    assert device == torch.device("cuda", 0)
    vals = [n.meta["val"] for n in moved.graph.nodes if n.op == "placeholder"]
    assert vals[2].device == device and vals[2].dim() == 0 and inputs[2].device == device
    # the caller's graph is left as it was
    assert [n.meta["val"].device.type for n in gm.graph.nodes if n.op == "placeholder"] == ["cuda", "cuda", "cpu"]
    assert len([n for n in moved.graph.nodes if n.op == "call_function"]) == 3


def test_scalar_used_on_the_cpu_or_without_a_cuda_graph_stays():
    def on_cpu(x, step):
        return x * 2, step + 1  # the new step is a CPU tensor: a CUDA graph cannot make it

    def viewed(x, step):
        return (x * step.view(()),)  # a view of the scalar is a CPU tensor

    for fn in (on_cpu, viewed):
        gm, args = _trace(fn, ((4,), "cuda"), ((), "cpu"))
        assert host_scalar_inputs(gm, args) == [], fn.__name__
    gm, args = _trace(_scaled, ((4, 3), "cpu"), ((3, 3), "cpu"), ((), "cpu"))
    assert host_scalar_inputs(gm, args) == []  # nothing on CUDA: no device to move to


def test_replays_read_each_calls_scalar_and_hand_back_the_callers_tensor():
    rec = FakeRecorder()
    w = torch.nn.Parameter(torch.randn(3, 3))
    graphed = HostScalars(wrap(_scaled, recorder=rec), [2], torch.device("cpu"))
    with torch.no_grad():
        for k in range(5):
            x, scale = torch.randn(4, 3), torch.tensor(0.5 + k)
            out, same = graphed(x, w, scale)
            torch.testing.assert_close(out, _scaled(x, w, scale)[0])
            assert same is scale
            del out, same  # kept outputs would make the wrapper record a replica
    assert rec.captures == 1 and rec.replays == 4
