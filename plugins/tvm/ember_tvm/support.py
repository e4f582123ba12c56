"""Which nodes TVM's torch importer can take, and the split of a graph into TVM and PyTorch pieces.

A node goes to TVM when the importer has a converter for it, its values are tensors of a dtype
TVM handles on one device, and it is not on a list of known semantic gaps of the importer
(those would import without error but compute something else). Everything else stays in
PyTorch; maximal connected groups of supported nodes become ``fused_N`` submodules that the
backend compiles with TVM.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Mapping

import torch
import torch.fx as fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .converters import CUSTOM_CONVERTERS
from .prepare import VIEW_OPS, node_name

SUPPORTED_DTYPES = frozenset({
    torch.float32, torch.float64, torch.float16, torch.bfloat16,
    torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
})


@dataclasses.dataclass(frozen=True)
class ValueInfo:
    """What one node produced when the graph ran eagerly on the example inputs."""

    kind: str  # "tensor", "tensors" (tuple/list of tensors) or "other"
    dtypes: tuple[torch.dtype, ...] = ()
    devices: tuple[torch.device, ...] = ()


def describe(value: Any) -> ValueInfo:
    """The :class:`ValueInfo` of a runtime value."""
    if isinstance(value, torch.Tensor):
        return ValueInfo("tensor", (value.dtype,), (value.device,))
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return ValueInfo("tensors", tuple(v.dtype for v in value), tuple(v.device for v in value))
    return ValueInfo("other")


class _Recorder(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.infos: dict[str, ValueInfo] = {}

    def run_node(self, n: fx.Node) -> Any:
        value = super().run_node(n)
        self.infos[n.name] = describe(value)
        return value


def record_values(gm: fx.GraphModule, inputs: list[Any]) -> dict[str, ValueInfo]:
    """Run ``gm`` eagerly on clones of ``inputs`` and describe every node's value."""
    clones = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    recorder = _Recorder(gm)
    with torch.no_grad():
        recorder.run(*clones)
    return recorder.infos


@functools.lru_cache(maxsize=1)
def importer_ops() -> frozenset[str]:
    """Names of the call_function/call_method targets TVM's fx importer converts."""
    from tvm.relax.frontend.torch.fx_translator import TorchFXImporter

    names = {k for k in TorchFXImporter().convert_map if isinstance(k, str)}
    return frozenset(names | set(CUSTOM_CONVERTERS))


def _arg(node: fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _binary_tensor_only(node: fx.Node) -> bool:
    return not node.kwargs and len(node.args) == 2 and all(isinstance(a, fx.Node) for a in node.args)


#: Known gaps of the importer: op name -> predicate that must hold for the node to go to TVM.
GUARDS: Mapping[str, Callable[[fx.Node, Mapping[str, ValueInfo]], bool]] = {
    # torch.max/min(x, dim) return (values, indices); the importer only knows the binary form.
    "max": lambda n, i: _binary_tensor_only(n),
    "min": lambda n, i: _binary_tensor_only(n),
    # matmul/bmm are imported with out_dtype float32 whatever the input dtypes.
    "matmul": lambda n, i: all(i[a.name].dtypes == (torch.float32,) for a in n.all_input_nodes),
    "bmm": lambda n, i: all(i[a.name].dtypes == (torch.float32,) for a in n.all_input_nodes),
    "linear": lambda n, i: all(i[a.name].dtypes == (torch.float32,) for a in n.all_input_nodes),
    "addmm": lambda n, i: all(i[a.name].dtypes == (torch.float32,) for a in n.all_input_nodes),
    "baddbmm": lambda n, i: all(i[a.name].dtypes == (torch.float32,) for a in n.all_input_nodes),
    # dropout is imported as identity: only right when it is provably off.
    "dropout": lambda n, i: _arg(n, 2, "training", True) is False or _arg(n, 1, "p", 0.5) == 0,
    "batch_norm": lambda n, i: _arg(n, 5, "training", False) is False,
    # reductions with an explicit accumulation dtype are not imported faithfully.
    "sum": lambda n, i: n.kwargs.get("dtype") is None,
    "mean": lambda n, i: n.kwargs.get("dtype") is None,
    "prod": lambda n, i: n.kwargs.get("dtype") is None,
    # var/std are imported as the biased estimator and read keepdim where torch has unbiased.
    "var": lambda n, i: False,
    "std": lambda n, i: False,
    "softmax": lambda n, i: _arg(n, 2, "dtype") is None,
    "log_softmax": lambda n, i: _arg(n, 2, "dtype") is None,
}


class TvmSupport(OperatorSupportBase):
    """Decides node by node whether TVM gets it (see the module docstring)."""

    def __init__(self, infos: Mapping[str, ValueInfo], keep_in_torch: set[str]) -> None:
        self.infos = infos
        self.keep_in_torch = keep_in_torch
        self.ops = importer_ops()

    def is_node_supported(self, submodules: Mapping[str, torch.nn.Module], node: fx.Node) -> bool:
        return not self.reason(node)

    def reason(self, node: fx.Node) -> str:
        """"" when ``node`` can go to TVM, else why not."""
        if node.op not in ("call_function", "call_method"):
            return f"{node.op} node"
        name = node_name(node)
        if name not in self.ops:
            return f"no TVM converter for {name!r}"
        if node.name in self.keep_in_torch:
            return "view of a graph input returned as output"
        info = self.infos.get(node.name)
        if info is None or info.kind == "other":
            return "produces a non-tensor value"
        if info.kind == "tensors" and any(u.op == "output" for u in node.users):
            return "tuple returned directly"
        devices = set(info.devices)
        for arg in node.all_input_nodes:
            arg_info = self.infos.get(arg.name)
            if arg_info is not None and arg_info.kind == "tensors" and self.reason(arg):
                return f"reads a tuple produced in PyTorch by {arg.name!r}"
            if arg_info is not None and arg_info.kind != "other":
                devices.update(arg_info.devices)
                if not set(arg_info.dtypes) <= SUPPORTED_DTYPES:
                    return f"dtype {arg_info.dtypes} not supported"
        if len(devices) > 1:
            return "values on several devices"
        if not set(info.dtypes) <= SUPPORTED_DTYPES:
            return f"dtype {info.dtypes} not supported"
        guard = GUARDS.get(name)
        if guard is not None and not guard(node, self.infos):
            return f"{name!r} with arguments TVM's importer does not handle faithfully"
        return ""


def views_of_inputs_returned(gm: fx.GraphModule) -> set[str]:
    """Names of view nodes (and their view chains) that alias an input and reach the output.

    These must run in PyTorch so that the caller gets a real view, as eager would return.
    """
    aliases: dict[fx.Node, bool] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            aliases[node] = True
        elif node.op in ("call_function", "call_method") and node_name(node) in VIEW_OPS:
            first = node.args[0] if node.args else None
            aliases[node] = isinstance(first, fx.Node) and aliases.get(first, False)
    keep: set[str] = set()
    output = next(n for n in gm.graph.nodes if n.op == "output")
    stack = [n for n in output.all_input_nodes if aliases.get(n) and n.op != "placeholder"]
    while stack:
        node = stack.pop()
        if node.name in keep:
            continue
        keep.add(node.name)
        first = node.args[0]
        if isinstance(first, fx.Node) and first.op != "placeholder":
            stack.append(first)
    return keep


def partition(gm: fx.GraphModule, support: TvmSupport) -> tuple[fx.GraphModule, list[str]]:
    """Fuse supported groups into ``fused_N`` submodules; return the new module and their names.

    Groups made only of view ops stay in PyTorch (running them in TVM would turn views into
    copies and gain nothing).
    """
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    proposed = partitioner.propose_partitions()
    kept = [
        p for p in proposed
        if any(node_name(n) not in VIEW_OPS for n in p.nodes)
    ]
    if not kept:
        return gm, []
    fused = partitioner.fuse_partitions(kept, prefix="fused_")
    names = [n.target for n in fused.graph.nodes if n.op == "call_module"]
    return fused, [str(n) for n in names]
