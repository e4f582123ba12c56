"""Module hooks inside captured code: ``nn.Module.__call__``'s hook logic, inlined.

A module call with forward pre-hooks or forward hooks (its own or global, plain or
``with_kwargs``) is captured as ``_call_impl`` runs it: each pre-hook is called on
``(module, args)`` (or ``(module, args, kwargs)``) and a value it returns replaces the
arguments; then forward; then each forward hook, whose returned value replaces the output.
Hooks are Python and inlined like forward, so they land in the same graph.

Backward hooks run inside autograd's engine, which a graph does not hold: a module with one
is not captured (the call is a graph break) and says so, instead of dropping the hooks.
The keys of every non-empty hook table read are guarded, so adding or removing a hook
recompiles.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from torch.nn.modules import module as module_mod

from .ops import python_value
from .sources import AttrSource, ConstantSource, Source
from .values import ConstVar, DictVar, TupleVar, Var

if TYPE_CHECKING:
    import torch

    from .frame import Frame

Forward = Callable[[list[Var], dict[str, Var]], Var]


def has_backward_hooks(module: "torch.nn.Module") -> bool:
    return bool(module._backward_hooks or getattr(module, "_backward_pre_hooks", None)
                or module_mod._global_backward_hooks or getattr(module_mod, "_global_backward_pre_hooks", None))


def has_forward_hooks(module: "torch.nn.Module") -> bool:
    return bool(module._forward_hooks or module._forward_pre_hooks
                or module_mod._global_forward_hooks or module_mod._global_forward_pre_hooks)


def _guard_table(frame: "Frame", source: Source | None, table: dict) -> None:
    if table and source is not None:
        frame.state.guards.dict_keys(source, table)


def _global(name: str) -> tuple[dict, Source]:
    return getattr(module_mod, name), AttrSource(ConstantSource(module_mod, id(module_mod)), name)


def call_with_hooks(frame: "Frame", mod_var: ConstVar, args: list[Var], kwargs: dict[str, Var],
                    forward: Forward) -> Var:
    """``mod_var(*args, **kwargs)`` through its forward pre-hooks, ``forward`` and forward hooks."""
    from .dispatch import call

    module = mod_var.value
    if has_backward_hooks(module):
        frame.fail(f"module {type(module).__name__} has backward hooks (register_full_backward_hook): "
                   "they run in autograd's engine, so this call is not captured")
    own = mod_var.source
    pre_global, pre_global_src = _global("_global_forward_pre_hooks")
    post_global, post_global_src = _global("_global_forward_hooks")
    _guard_table(frame, pre_global_src, pre_global)
    _guard_table(frame, post_global_src, post_global)
    for name in ("_forward_pre_hooks", "_forward_hooks"):
        _guard_table(frame, AttrSource(own, name) if own is not None else None, getattr(module, name))

    pre_kwargs = module._forward_pre_hooks_with_kwargs
    for hook_id, hook in (*pre_global.items(), *module._forward_pre_hooks.items()):
        if hook_id in pre_kwargs:
            result = call(frame, ConstVar(hook), [mod_var, TupleVar(list(args)), DictVar(dict(kwargs))], {})
            if not _is_none(result):
                if not (isinstance(result, TupleVar) and len(result.items) == 2):
                    frame.fail("a forward pre-hook with kwargs returned something other than (args, kwargs)")
                new_args, new_kwargs = result.items
                args = _items(frame, new_args)
                kwargs = _kwargs(frame, new_kwargs)
        else:
            result = call(frame, ConstVar(hook), [mod_var, TupleVar(list(args))], {})
            if not _is_none(result):
                args = list(result.items) if isinstance(result, TupleVar) else [result]

    output = forward(args, kwargs)
    post_kwargs = (module._forward_hooks_with_kwargs, getattr(module_mod, "_global_forward_hooks_with_kwargs", {}))
    for hook_id, hook in (*post_global.items(), *module._forward_hooks.items()):
        if any(hook_id in table for table in post_kwargs):
            result = call(frame, ConstVar(hook), [mod_var, TupleVar(list(args)), DictVar(dict(kwargs)), output], {})
        else:
            result = call(frame, ConstVar(hook), [mod_var, TupleVar(list(args)), output], {})
        if not _is_none(result):
            output = result
    return output


def _is_none(var: Var) -> bool:
    return isinstance(var, ConstVar) and var.value is None


def _items(frame: "Frame", var: Var) -> list[Var]:
    if isinstance(var, TupleVar):
        return list(var.items)
    if isinstance(var, ConstVar) and isinstance(var.value, tuple):
        return [ConstVar(v) for v in var.value]
    frame.fail("a forward pre-hook returned arguments that are not a tuple")
    raise AssertionError


def _kwargs(frame: "Frame", var: Var) -> dict[str, Var]:
    if isinstance(var, DictVar):
        return dict(var.items)
    if isinstance(var, ConstVar) and isinstance(var.value, dict):
        return {k: ConstVar(v) for k, v in python_value(var).items()}
    frame.fail("a forward pre-hook returned keyword arguments that are not a dict")
    raise AssertionError
