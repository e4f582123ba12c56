"""0-dim CPU tensor inputs of a CUDA graph (a step count, a loss scale): moved onto the device.

A CUDA kernel that reads a 0-dim CPU tensor gets its value as a kernel argument, read on the
host when the kernel is launched: recorded into a CUDA graph, that value would be replayed
forever. torch.compile copies such a scalar to the device before its graph runs (inductor's
``DeviceCopy`` of a CPU scalar, partitioned out of the recorded graph), and so does ember: when
every op reading the scalar computes on the graph's CUDA device (or the graph returns it as it
is), the graph is compiled with a 0-dim device tensor in its place (``on_device``), and each
call copies the caller's value into it (``HostScalars``) before the recorded graph replays.
A scalar used by CPU computations keeps the graph off CUDA graphs (one warning, as before).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.fx


def _val(node: torch.fx.Node) -> Any:
    return node.meta.get("val", node.meta.get("example_value"))


def _cuda_device(values: Sequence[Any]) -> torch.device | None:
    """The one CUDA device of the non-scalar tensors in ``values`` (None: none, or several)."""
    devices = {v.device for v in values if isinstance(v, torch.Tensor) and v.device.type == "cuda"}
    return devices.pop() if len(devices) == 1 else None


def is_host_scalar(value: Any) -> bool:
    """Whether ``value`` is a 0-dim CPU tensor (real or fake)."""
    return isinstance(value, torch.Tensor) and value.device.type == "cpu" and value.dim() == 0


def _device_uses_only(node: torch.fx.Node, device: torch.device) -> bool:
    """Whether every use of ``node`` is an op computing on ``device`` (not a view of the scalar,
    which would stay on the CPU) or the graph's output."""
    for user in node.users:
        if user.op == "output":
            continue
        if user.op != "call_function":
            return False
        vals = [v for v in torch.utils._pytree.tree_leaves(_val(user)) if isinstance(v, torch.Tensor)]
        if not vals or any(v.device != device for v in vals):
            return False
    return True


def host_scalar_inputs(gm: torch.fx.GraphModule | None, example_inputs: Sequence[Any]) -> list[int]:
    """Positions of 0-dim CPU tensor inputs that only feed computations on the graph's one CUDA
    device (see the module docstring); [] when there is none or the graph is not known."""
    if gm is None:
        return []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    vals = [_val(n) for n in placeholders]
    if len(vals) != len(example_inputs):
        return []
    device = _cuda_device([v for v in vals if not is_host_scalar(v)])
    if device is None:
        return []
    return [i for i, (n, v) in enumerate(zip(placeholders, vals))
            if is_host_scalar(v) and is_host_scalar(example_inputs[i]) and n.users
            and _device_uses_only(n, device)]


def _to(value: Any, device: torch.device) -> Any:
    """``value`` (real or fake) as a tensor of the same value type on ``device``."""
    mode = getattr(value, "fake_mode", None)
    if mode is None:
        return value.to(device)
    with mode:
        return torch.empty_strided((), (), dtype=value.dtype, device=device)


def on_device(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], positions: Sequence[int]
              ) -> tuple[torch.fx.GraphModule, list[Any], torch.device]:
    """A copy of ``gm`` (and of the example inputs) whose inputs at ``positions`` are 0-dim tensors
    on the graph's CUDA device, and that device. ``gm`` itself is left as it is."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    device = _cuda_device([_val(n) for i, n in enumerate(placeholders) if i not in positions])
    assert device is not None
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    graph._codegen = gm.graph._codegen
    result, old_output = graph.graph_copy(gm.graph, env, return_output_node=True)  # type: ignore[misc]
    graph.output(result).meta = dict(old_output.meta)
    for i in positions:
        node = env[placeholders[i]]
        node.meta = dict(node.meta)
        for key in ("val", "example_value"):
            if key in node.meta:
                node.meta[key] = _to(node.meta[key], device)
    inputs = list(example_inputs)
    for i in positions:
        inputs[i] = _to(inputs[i], device)
    return torch.fx.GraphModule(gm, graph), inputs, device


class HostScalars:
    """Calls ``fn`` (compiled for ``on_device``'s graph) with the inputs at ``positions`` copied
    to ``device``; an output that is one of those copies is handed back as the caller's tensor."""

    def __init__(self, fn: Callable, positions: Sequence[int], device: torch.device) -> None:
        self.fn = fn
        self.positions = tuple(positions)
        self.device = device

    def __call__(self, *args: Any) -> Any:
        moved = list(args)
        for i in self.positions:
            moved[i] = args[i].to(self.device, non_blocking=True)
        out = self.fn(*moved)
        if not isinstance(out, (tuple, list)):
            return out
        copies = {id(moved[i]): args[i] for i in self.positions}
        return type(out)(copies.get(id(o), o) for o in out)

    def __getattr__(self, name: str) -> Any:  # stats, graph_count, ... of the wrapped callable
        return getattr(self.fn, name)
