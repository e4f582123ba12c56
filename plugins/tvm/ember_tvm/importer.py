"""Import one torch-level fx graph into a Relax IRModule with TVM's ``from_fx``.

Why ``from_fx`` and not ``from_exported_program``: ember hands over torch-level fx graphs, and
getting an ``ExportedProgram`` would need torch's export API, which ember's product code must not
call. ``from_fx`` reads the graph as it is; ember adds what it needs around it:

* scalar inputs (Python ints/floats) are specialized into the graph (the runner re-specializes
  when they change);
* keyword arguments are rewritten into positional ones in signature order, because many of the
  importer's converters read only ``node.args`` (``torch.conv2d(x, w, padding=1)`` would
  otherwise silently lose its padding);
* ember's converters (``converters.py``) fill the gaps in the importer's op table.

Every tensor input of the graph (parameters included) stays a Relax function parameter, so
weights are never baked in as constants.
"""
from __future__ import annotations

import copy
import functools
from typing import Any, Sequence

import torch
import torch.fx as fx
from torch.fx.operator_schemas import normalize_function

from .converters import CUSTOM_CONVERTERS


def specialize_scalars(gm: fx.GraphModule, example_args: Sequence[Any]) -> fx.GraphModule:
    """A copy of ``gm`` whose non-tensor placeholders are replaced by their example values."""
    gm = copy.deepcopy(gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, value in zip(placeholders, example_args):
        if isinstance(value, torch.Tensor):
            continue
        for user in list(node.users):
            user.args = fx.node.map_arg(user.args, lambda a: value if a is node else a)
            user.kwargs = fx.node.map_arg(user.kwargs, lambda a: value if a is node else a)
        gm.graph.erase_node(node)
    gm.recompile()
    return gm


def _arg_type(value: Any) -> Any:
    return torch.Tensor if isinstance(value, fx.Node) else type(value)


def _positional(target: Any, args: tuple, kwargs: dict) -> tuple | None:
    """All arguments up to the last one given, in signature order; None if it cannot bind."""
    try:
        bound = normalize_function(
            target, args, kwargs,
            arg_types=tuple(_arg_type(a) for a in args),
            kwarg_types={k: _arg_type(v) for k, v in kwargs.items()},
            normalize_to_only_use_kwargs=True,
        )
    except Exception:  # ambiguous or unbindable schemas are left as they are
        return None
    if bound is None:
        return None
    names = list(bound.kwargs)
    given = {names[i] for i in range(min(len(args), len(names)))} | set(kwargs)
    last = max((i for i, name in enumerate(names) if name in given), default=-1)
    return tuple(bound.kwargs[name] for name in names[: last + 1])


def positionalize(gm: fx.GraphModule) -> None:
    """Rewrite keyword arguments of call nodes into positional ones where the schema allows.

    Keyword arguments are also kept, for converters that read ``node.kwargs``.
    """
    for node in gm.graph.nodes:
        if not node.kwargs:
            continue
        if node.op == "call_function":
            new_args = _positional(node.target, tuple(node.args), dict(node.kwargs))
        elif node.op == "call_method" and hasattr(torch, str(node.target)):
            new_args = _positional(
                getattr(torch, str(node.target)), tuple(node.args), dict(node.kwargs)
            )
        else:
            new_args = None
        if new_args is not None and len(new_args) >= len(node.args):
            node.args = new_args


def import_graph(gm: fx.GraphModule, example_args: Sequence[Any]) -> Any:
    """Relax IRModule (function ``main``) computing ``gm`` on the tensors of ``example_args``.

    ``main`` takes the tensor arguments in order; scalars are specialized to their example values.
    """
    from tvm.relax.frontend.torch.fx_translator import TorchFXImporter

    gm = specialize_scalars(gm, example_args)
    positionalize(gm)
    input_info = [
        (tuple(int(s) for s in t.shape), str(t.dtype).removeprefix("torch."))
        for t in example_args
        if isinstance(t, torch.Tensor)
    ]
    importer = TorchFXImporter()
    for name, convert in CUSTOM_CONVERTERS.items():
        # Bound here so that call_method nodes (which get only the node) reach them too.
        importer.convert_map[name] = functools.partial(_bound, convert, importer)
    return importer.from_fx(
        gm, input_info, keep_params_as_input=False, unwrap_unit_return_tuple=False,
        no_bind_return_tuple=False,
    )


def _bound(convert: Any, importer: Any, node: fx.Node) -> Any:
    return convert(node, importer)
