"""``optimizer.step()`` inside captured code: the update is traced like any other torch code.

Two things in a torch optimizer's step are not plain tracing:

- ``_init_group(group, params, grads, state...)`` fills empty lists with the parameters that
  have a gradient, their gradients and their state, and creates missing state (``exp_avg``,
  ``step``...) on the first step. It runs for real at capture time, as torch.compile runs it:
  the state it creates is what eager's first step would create. The lists it filled are read
  back into the capture, each tensor as a graph input read through its source (a parameter of
  ``param_groups``, its ``.grad``, an entry of ``state[param]``), and the structure it depended
  on is guarded: which parameters have a gradient and the keys of each parameter's state.
- ``self.state[param]``: the state is a dict keyed by parameter tensors. A key that is a graph
  input stands for the real tensor it was read from, so the entry is read through its source.

The foreach kernels of the update (``torch._foreach_mul_``...) then land in the graph, writing
into their inputs (parameters, state) in place.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import torch

from .builder import wrap
from .constants import NotConstant, lift, python_value
from .instances import pin
from .sources import AttrSource, Constants, ItemSource, Source
from .tensors import input_of
from .values import ConstVar, DictVar, ListVar, TensorVar, Var

if TYPE_CHECKING:
    from .frame import Frame


@dataclasses.dataclass(frozen=True)
class TensorKeySource(Source):
    """``base[key]`` for a dict keyed by a tensor (``optimizer.state[param]``), named after the
    source of the key tensor in logs and graph input names."""

    base: Source
    key_source: Source
    key: Any = dataclasses.field(compare=False, hash=False)

    def apply(self, base_expr: str, consts: Constants) -> str:  # .get: a guard never runs __missing__
        return f"{base_expr}.get({consts.name(self.key, 'key')})"

    def describe(self) -> str:
        return f"{self.base.describe()}[{self.key_source.describe()}]"


def is_init_group(owner: Any, func: Any) -> bool:
    """``optimizer._init_group`` of a torch optimizer."""
    return isinstance(owner, torch.optim.Optimizer) and getattr(func, "__name__", None) == "_init_group"


def _real_group(frame: "Frame", opt: torch.optim.Optimizer, var: Var) -> dict:
    """The real param group a DictVar was read from."""
    if isinstance(var, DictVar):
        for value, seen in frame.state.containers.values():
            if seen is var and any(value is group for group in opt.param_groups):
                return value
    frame.fail("optimizer._init_group called with a param group the capture did not read from the optimizer")
    raise AssertionError


def _argument(frame: "Frame", opt: torch.optim.Optimizer, var: Var) -> Any:
    if isinstance(var, ListVar) and var.source is None and not var.items:
        return []  # a list _init_group fills
    if isinstance(var, DictVar):
        return _real_group(frame, opt, var)
    try:
        return python_value(var)
    except NotConstant:
        frame.fail("optimizer._init_group called with tensors")
        raise


def _tensor_sources(opt: torch.optim.Optimizer, source: Source) -> dict[int, tuple[torch.Tensor, Source]]:
    """Every tensor an optimizer holds, by id, with the source it is read from."""
    found: dict[int, tuple[torch.Tensor, Source]] = {}
    groups = AttrSource(source, "param_groups")
    state = AttrSource(source, "state")
    for gi, group in enumerate(opt.param_groups):
        for pi, p in enumerate(group["params"]):
            param = ItemSource(ItemSource(ItemSource(groups, gi), "params"), pi)
            found.setdefault(id(p), (p, param))
            if p.grad is not None:
                found.setdefault(id(p.grad), (p.grad, AttrSource(param, "grad")))
            for key, value in (opt.state[p].items() if p in opt.state else ()):
                if isinstance(value, torch.Tensor):
                    found.setdefault(id(value), (value, ItemSource(TensorKeySource(state, param, p), key)))
    return found


def init_group(frame: "Frame", opt_var: ConstVar, args: list[Var], kwargs: dict[str, Var]) -> Var:
    """``opt._init_group(...)``: run for real, its lists read back as graph inputs, guarded."""
    opt = opt_var.value
    if opt_var.source is None:
        frame.fail("optimizer._init_group of an optimizer with no source")
    pin(opt_var)  # its state is keyed by these very parameters: the same optimizer, the same state
    frame.state.guards.identity(AttrSource(opt_var.source, "state"), opt.state)
    py_args = [_argument(frame, opt, a) for a in args]
    py_kwargs = {k: _argument(frame, opt, v) for k, v in kwargs.items()}
    result = opt._init_group(*py_args, **py_kwargs)  # creates missing state, as eager's step would
    sources = _tensor_sources(opt, opt_var.source)
    state = frame.state
    for var, value in [*zip(args, py_args), *((kwargs[k], py_kwargs[k]) for k in kwargs)]:
        if not (isinstance(var, ListVar) and isinstance(value, list)):
            continue
        state.remember(var)
        for item in value:
            if isinstance(item, torch.Tensor):
                if id(item) not in sources:
                    frame.fail("optimizer._init_group returned a tensor the optimizer does not hold")
                var.items.append(wrap(state, item, sources[id(item)][1]))
            else:
                var.items.append(lift(item))
    for group in (g for g in py_args + list(py_kwargs.values()) if any(g is pg for pg in opt.param_groups)):
        _guard_structure(frame, opt, opt_var.source, group)
    return lift(result)


def _guard_structure(frame: "Frame", opt: torch.optim.Optimizer, source: Source, group: dict) -> None:
    """The parameters of ``group`` themselves (the state's keys), which have a gradient, and
    the keys of each one's state."""
    gi = next(i for i, g in enumerate(opt.param_groups) if g is group)
    params = ItemSource(ItemSource(AttrSource(source, "param_groups"), gi), "params")
    guards = frame.state.guards
    for pi, p in enumerate(group["params"]):
        param = ItemSource(params, pi)
        guards.identity(param, p)
        if p.grad is None:
            wrap(frame.state, None, AttrSource(param, "grad"))
        elif p in opt.state:
            guards.dict_keys(TensorKeySource(AttrSource(source, "state"), param, p), opt.state[p])


def item_by_tensor(frame: "Frame", container: ConstVar, key: TensorVar) -> Var:
    """``d[t]`` for a real dict keyed by tensors (an optimizer's state), ``t`` a graph input."""
    found = input_of(frame, key)
    if found is None or container.source is None:
        frame.fail("a dict lookup with a tensor key that is not an input of the graph")
        raise AssertionError
    key_source, tensor = found
    if tensor not in container.value:
        frame.fail("a lookup of a missing tensor key (it would run __missing__ or raise)")
    return wrap(frame.state, container.value[tensor], TensorKeySource(container.source, key_source, tensor))


__all__ = ["init_group", "is_init_group", "item_by_tensor"]
