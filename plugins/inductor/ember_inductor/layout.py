"""Channels-last layout for graphs of 2-D convolutions on GPUs.

cuDNN runs 2-D convolutions on NHWC (channels-last) data. Given NCHW tensors it transposes the
input to NHWC and the result back for every call: on an H100, densenet121 (batch 16, 128x128,
fp32) spent about a sixth of its call in those transposes (``benchmarks/profile_gpu.py``). This pass gives every such
convolution a channels-last input instead; the convolution then returns channels-last, the
pointwise kernels and pooling after it keep that layout, and so does the next convolution's
input. A graph input in NCHW is converted once, where it first feeds a convolution.

Graph outputs keep the layout eager PyTorch gives them (converted back if needed). A graph with
more 4-D outputs than conversions it may add (the forward half of a training step, whose
activations saved for the backward are outputs) is left as it is, as are graphs that mutate
their inputs. Fake-tensor metadata (``meta["val"]``) is recomputed for every node from the
first one that changed, so the lowering sees the new strides.

A training step is converted whole, before ember_aot splits it (:func:`channels_last_training`,
its joint pass): the convolutions' backward (``convolution_backward``) gets channels-last
gradients and inputs too, the activations saved for it are channels-last in both halves, and
only the joint graph's outputs are converted back (the weights' gradients, which cuDNN returns
channels-last: eager's autograd would copy them into the weights' layout the same way). On the
H200 a resnet18 training step spent about a quarter of its GPU time in cuDNN's transposes.
"""
from __future__ import annotations

import logging
from typing import Any

import torch
import torch.fx
from torch._prims_common import suggest_memory_format
from torch.utils import _pytree as pytree

log = logging.getLogger("ember.inductor")
aten = torch.ops.aten

#: Convolutions, and the positions of their arguments converted to channels-last: in any graph,
#: a convolution's input.
CONVOLUTIONS = {aten.convolution.default: (0,)}
#: In a training step (forward and backward in one graph) also the weights, which aten would
#: convert inside each convolution for a channels-last input with a slower copy (measured on a
#: resnet18 training step, ``benchmarks/profile_gpu.py``), and the backward's gradient, input and
#: weight.
TRAINING = {aten.convolution.default: (0, 1), aten.convolution_backward.default: (0, 1, 2)}
#: ember_aot's ``partition.SAVE`` (a test keeps them equal): a joint graph's node its partitioner
#: saves for the backward rather than recomputing there. Set on the weights' conversions (in a
#: resnet18 training step the backward converted 18 weights again, 18 more kernels; saving them
#: costs one channels-last copy of the weights); an activation's conversion is left to the
#: min-cut, which may convert a saved NCHW input again rather than hold a second copy.
SAVE = "ember_aot_save"
#: The dtypes cuDNN runs channels-last (it runs float64 convolutions NCHW).
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _is_channels_last(t: Any) -> bool:
    return t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last)


def _to_convert(node: torch.fx.Node, device_type: str, positions: dict) -> list[torch.fx.Node]:
    """The arguments at ``positions[op]`` of a 2-D convolution (or its backward) on
    ``device_type`` that are not channels-last yet."""
    if node.op != "call_function" or node.target not in positions:
        return []
    data = node.args[1] if node.target is aten.convolution_backward.default else node.args[0]
    if not _convertible(data, device_type):
        return []
    return [node.args[i] for i in positions[node.target]
            if _convertible(node.args[i], device_type) and not _is_channels_last(node.args[i].meta["val"])]


def _weight(node: torch.fx.Node) -> torch.fx.Node:
    """The weight argument of a convolution or of its backward."""
    return node.args[2] if node.target is aten.convolution_backward.default else node.args[1]


def _convertible(x: Any, device_type: str) -> bool:
    """A 4-D tensor value on ``device_type`` of a dtype cuDNN runs channels-last."""
    val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    return (isinstance(val, torch.Tensor) and val.dim() == 4 and val.device.type == device_type
            and val.dtype in DTYPES)


def _mutates(gm: torch.fx.GraphModule) -> bool:
    return any(n.op == "call_function" and getattr(getattr(n.target, "_schema", None), "is_mutable", False)
               for n in gm.graph.nodes)


def channels_last_training(gm: torch.fx.GraphModule) -> bool:
    """The joint pass of a training step (forward and backward in one graph, see the module
    docstring): every output may be converted back, none is a saved activation. Only where cuDNN
    runs the convolutions (``_backend_layouts`` gives its gradients' layouts)."""
    if torch.version.hip is not None or not (torch.backends.cudnn.is_available() and torch.backends.cudnn.enabled):
        return False
    return channels_last_convolutions(gm, "cuda", max_output_conversions=None, training=True)


def channels_last_convolutions(gm: torch.fx.GraphModule, device_type: str = "cuda",
                               max_output_conversions: int | None = 1, training: bool = False) -> bool:
    """Rewrite ``gm`` (an aten graph with ``meta["val"]`` fakes) in place as described above, for
    the convolutions on ``device_type``.

    Returns whether it changed anything. Nothing is changed when the graph has no such 2-D
    convolution, mutates an input, or has more 4-D outputs than ``max_output_conversions``
    (None: any number). ``training``: a joint graph, whose weights and convolutions' backward are
    converted too (``TRAINING``).
    """
    graph = gm.graph
    positions = TRAINING if training else CONVOLUTIONS
    if not any(_to_convert(n, device_type, positions) for n in graph.nodes) or _mutates(gm):
        return False
    output = next(n for n in graph.nodes if n.op == "output")
    expected = [a.meta.get("val") if isinstance(a, torch.fx.Node) else None
                for a in pytree.tree_leaves(output.args[0])]
    maps = [v for v in expected if isinstance(v, torch.Tensor) and v.dim() == 4]
    limit = len(maps) if max_output_conversions is None else max_output_conversions
    if len(maps) > limit:  # decided before the (costly) re-propagation
        return False
    saved = {n: n.meta.get("val") for n in graph.nodes}
    added: list[torch.fx.Node] = []
    try:
        mode = _fake_mode(gm)
        _propagate(gm, mode, added, device_type, positions)
        converted = _restore_output_layouts(gm, mode, output, expected, added)
    except Exception as exc:  # a fake kernel that fails here: keep the graph as traced
        log.debug("channels-last layout not applied: %s: %s", type(exc).__name__, exc)
        converted = None
    if converted is None or converted > limit:
        _undo(gm, saved, added)
        return False
    graph.lint()
    gm.recompile()
    return True


def _fake_mode(gm: torch.fx.GraphModule) -> Any:
    for n in gm.graph.nodes:
        val = n.meta.get("val")
        mode = getattr(val, "fake_mode", None)
        if mode is not None:
            return mode
    raise RuntimeError("the graph carries no fake tensors")


def _propagate(gm: torch.fx.GraphModule, mode: Any, added: list[torch.fx.Node], device_type: str,
               positions: dict) -> None:
    """Insert the channels-last conversions before convolutions, recomputing ``meta["val"]``
    of every call from the first conversion on (node order is a topological order)."""
    graph = gm.graph
    changed = False
    clones: dict[torch.fx.Node, torch.fx.Node] = {}  # one conversion per value, for all its convolutions
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        for x in _to_convert(node, device_type, positions):
            if x not in clones:
                with graph.inserting_before(node):
                    clones[x] = graph.call_function(aten.clone.default, (x,), {"memory_format": torch.channels_last})
                if x is _weight(node):  # the backward's convolutions read it too: saved, not converted again
                    clones[x].meta[SAVE] = True
                added.append(clones[x])
                _recompute(clones[x], mode)
            node.replace_input_with(x, clones[x])
            changed = True
        if changed:
            _recompute(node, mode)


def _recompute(node: torch.fx.Node, mode: Any) -> None:
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get("val"))
    with mode:
        val = node.target(*args, **kwargs)
        if node.target is aten.convolution_backward.default:
            val = _backend_layouts(args[1], args[2], val)
        node.meta["val"] = val


def _backend_layouts(x: torch.Tensor, weight: torch.Tensor, grads: tuple) -> tuple:
    """``convolution_backward``'s gradients with the layouts cuDNN returns for the dtypes converted
    here: channels-last when its input or weight is (the fake kernel's answer has varied between
    torch versions; where it agrees this changes nothing). Should a backend return others, the
    compiled graph's first call sees it (``LayoutMismatch``) and runs the graph with aten."""
    fmt = torch.channels_last
    if fmt not in (suggest_memory_format(x), suggest_memory_format(weight)):
        return grads
    gi, gw, gb = grads
    return (None if gi is None else gi.contiguous(memory_format=fmt),
            None if gw is None else gw.contiguous(memory_format=fmt), gb)


def _restore_output_layouts(gm: torch.fx.GraphModule, mode: Any, output: torch.fx.Node,
                            expected: list[Any], added: list[torch.fx.Node]) -> int | None:
    """Convert outputs whose layout changed back to eager's; the number converted, or None
    when one cannot be converted by a clone (a layout neither contiguous nor channels-last)."""
    leaves, spec = pytree.tree_flatten(output.args[0])
    converted = 0
    for i, (leaf, want) in enumerate(zip(leaves, expected)):
        if not isinstance(leaf, torch.fx.Node) or not isinstance(want, torch.Tensor):
            continue
        got = leaf.meta.get("val")
        if got.stride() == want.stride():
            continue
        if want.is_contiguous():
            fmt = torch.contiguous_format
        elif _is_channels_last(want):
            fmt = torch.channels_last
        else:
            return None
        with gm.graph.inserting_before(output):
            clone = gm.graph.call_function(aten.clone.default, (leaf,), {"memory_format": fmt})
        added.append(clone)
        _recompute(clone, mode)
        leaves[i] = clone
        converted += 1
    output.args = (pytree.tree_unflatten(leaves, spec),)
    return converted


def _undo(gm: torch.fx.GraphModule, saved: dict[torch.fx.Node, Any], added: list[torch.fx.Node]) -> None:
    for clone in reversed(added):
        clone.replace_all_uses_with(clone.args[0])
        gm.graph.erase_node(clone)
    for node, val in saved.items():
        node.meta["val"] = val
