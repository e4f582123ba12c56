"""The device a graph's kernels are generated for is that of the tensors it computes on, not
the first input's: a CPU mask or step count first among a CUDA graph's inputs made every op of
that graph an aten call (wav2vec2's masked backward on the H200)."""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from ember_inductor.graph import graph_device


def _graph(*vals: torch.Tensor) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    for i, val in enumerate(vals):
        graph.placeholder(f"a{i}").meta["val"] = val
    graph.output(None)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_a_cpu_tensor_first_does_not_make_a_cuda_graph_a_cpu_one():
    with FakeTensorMode():
        mask, x = torch.empty(2, 3, dtype=torch.bool), torch.empty(2, 3, device="cuda")
        assert graph_device(_graph(mask, x)) == torch.device("cuda", 0)
        assert graph_device(_graph(x, mask)) == torch.device("cuda", 0)
        assert graph_device(_graph(mask, mask)) == torch.device("cpu")
    assert graph_device(_graph()) == torch.device("cpu")


def test_a_graph_making_cuda_tensors_from_no_cuda_input_is_a_cuda_graph():
    """``torch.zeros(3, device="cuda")`` alone: its kernel and its output are on the GPU (the
    lowering and the wrapper decide the device in one place)."""
    graph = torch.fx.Graph()
    with FakeTensorMode():
        graph.call_function(torch.ops.aten.zeros.default, ([3],), {"device": "cuda"}).meta["val"] = \
            torch.zeros(3, device="cuda")
    graph.output(None)
    assert graph_device(torch.fx.GraphModule(torch.nn.Module(), graph)).type == "cuda"
