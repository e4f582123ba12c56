"""The user-facing entry points: ``compile``, ``optimize``, ``disable``, ``graph_break``, ``reset`` and
``OptimizedModule``."""
from __future__ import annotations

import functools
import types
from typing import Any, Callable

import torch

from . import torch_caches
from .backends import REGISTRY
from .capture.calls import has_hooks
from .compiled import BackendChoice, CompiledFunction, OptimizedModuleLike, make_wrapper, reset_all, trampoline
from .interrupts import safe_interrupts
from .tracebacks import pass_through
from .plugin import CompilerFn

MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class OptimizedModule(torch.nn.Module, OptimizedModuleLike):
    """What ``ember.compile(module)`` returns: calls go through the compiled forward.

    The original module is ``_orig_mod`` (so ``state_dict`` keys carry that prefix, as with
    torch.compile); attribute reads, writes and deletions, and ``training``, pass through to it.
    A copy (``copy.deepcopy``, a pickle round trip) compiles the copy of ``_orig_mod`` anew with
    the same settings, so that its compiled code reads its own parameters, never the original's.
    """

    def __init__(self, mod: torch.nn.Module, **settings: Any) -> None:
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_ember_settings"] = settings  # ember.compile's keyword arguments
        self.__dict__["_ember_call"] = _compile_module(mod, settings)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_ember_call"](*args, **kwargs)

    @property
    def training(self) -> bool:  # type: ignore[override]
        return self._modules["_orig_mod"].training

    @training.setter
    def training(self, value: bool) -> None:
        modules = self.__dict__.get("_modules")
        if modules and "_orig_mod" in modules:  # nn.Module.__init__ sets it before there is one
            modules["_orig_mod"].training = value

    def __getattr__(self, name: str) -> Any:
        modules = self.__dict__.get("_modules")
        if not modules or "_orig_mod" not in modules:  # while being built or unpickled
            raise AttributeError(name)
        if name == "_orig_mod":
            return modules["_orig_mod"]
        try:
            return getattr(modules["_orig_mod"], name)
        except AttributeError:  # something registered on this wrapper itself (add_module...)
            return super().__getattr__(name)

    def _own(self, name: str) -> bool:
        return name == "_orig_mod" or name in self.__dict__ or hasattr(type(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if self._own(name):
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if self._own(name):
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __reduce__(self) -> tuple:
        """Copies and pickles rebuild from the module and the settings (as torch.compile's do)."""
        return _rebuild_module, (self._orig_mod, self.__dict__["_ember_settings"])

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"


def _rebuild_module(mod: torch.nn.Module, settings: dict[str, Any]) -> OptimizedModule:
    return OptimizedModule(mod, **settings)


#: (module class, settings) -> the compiled call every compiled instance of that class shares
_SHARED: dict[tuple, CompiledFunction] = {}


def _call_module(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    return module(*args, **kwargs)


def _compile_module(mod: torch.nn.Module, settings: dict[str, Any]) -> Callable[..., Any]:
    """The module's compiled call. Modules of one class compiled with the same settings share
    one compiled function that takes the module as an argument (regional compilation: each block
    of a ``ModuleList`` compiled alone, one graph for all of them, as torch.compile; guarded on
    the module's class and structure, its parameters and buffers are inputs). A module with hooks,
    or settings that cannot be compared, gets a compiled function of its own."""
    choice = _resolve_backend(settings["backend"], settings["mode"], settings["options"])
    key = _share_key(mod, settings)
    if key is None:
        return make_wrapper(CompiledFunction(trampoline(mod), choice, settings["fullgraph"], settings["dynamic"]))
    shared = _SHARED.get(key)
    if shared is None:
        name = type(mod).__qualname__  # what logs and the profiler call it
        call = types.FunctionType(_call_module.__code__.replace(co_name=type(mod).__name__, co_qualname=name),
                                  _call_module.__globals__, type(mod).__name__)
        pass_through(call)  # its frame is ember's, not the user's, in tracebacks
        shared = _SHARED[key] = CompiledFunction(call, choice, settings["fullgraph"], settings["dynamic"])
    return make_wrapper(shared, bound_self=mod, has_self=True)


def _share_key(mod: torch.nn.Module, settings: dict[str, Any]) -> tuple | None:
    if has_hooks(mod) or type(mod).__call__ is not torch.nn.Module.__call__:
        return None
    try:
        options = tuple(sorted((settings["options"] or {}).items()))
        key = (type(mod), settings["backend"], settings["mode"], options, settings["fullgraph"], settings["dynamic"])
        hash(key)
    except TypeError:  # an option value that is a list or a dict
        return None
    return key


def _resolve_backend(backend: str | CompilerFn, mode: str | None, options: dict | None) -> BackendChoice:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(repr(m) for m in MODES)}")
    if mode is not None and options:
        raise ValueError("pass either mode or options to ember.compile, not both")
    with safe_interrupts():  # finding the backend may import its plugin
        name, compiler, spec = REGISTRY.lookup(backend)
    accepts = bool(spec and spec.accepts_options)
    if (mode not in (None, "default") or options) and not accepts:
        raise ValueError(f"backend {name!r} takes neither mode nor options")
    known = spec.option_names() if options and spec is not None else None
    unknown = sorted(set(options or ()) - set(known)) if known is not None else []
    if unknown:  # a typo in an option must not pass silently
        raise ValueError(f"unknown option(s) {', '.join(map(repr, unknown))} for backend {name!r}; "
                         f"its options are: {', '.join(sorted(known)) or 'none'}")
    # a callable passed as it is declares dynamic shapes with a ``dynamic = True`` attribute
    dynamic = spec.dynamic if spec is not None else getattr(compiler, "dynamic", False) is True
    return BackendChoice(name, compiler, accepts, mode, options, dynamic=dynamic)


def compile(
    model: Callable[..., Any] | None = None,
    *,
    backend: str | CompilerFn = "inductor",
    mode: str | None = None,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
) -> Any:
    """Compile ``model`` (a function, method, lambda or nn.Module) just in time.

    Same signature as ``torch.compile``; usable as ``@ember.compile`` and
    ``@ember.compile(backend=...)``. ``dynamic``: None specialises sizes first and makes those
    that change symbolic on the next compilation; True makes every size symbolic from the
    first; False specialises every size (see :mod:`ember.shapes`).
    """
    kwargs = dict(backend=backend, mode=mode, fullgraph=fullgraph, dynamic=dynamic, options=options,
                  disable=disable)
    if model is None:
        return functools.partial(compile, **kwargs)
    if disable:
        return model
    if isinstance(model, torch.nn.Module):
        return OptimizedModule(model, backend=backend, mode=mode, fullgraph=fullgraph, dynamic=dynamic,
                               options=options)
    choice = _resolve_backend(backend, mode, options)
    if isinstance(model, types.MethodType) and isinstance(model.__func__, types.FunctionType):
        cf = CompiledFunction(model.__func__, choice, fullgraph, dynamic)
        return make_wrapper(cf, bound_self=model.__self__, has_self=True)
    if isinstance(model, types.FunctionType):
        return make_wrapper(CompiledFunction(model, choice, fullgraph, dynamic))
    if callable(model):
        return make_wrapper(CompiledFunction(trampoline(model), choice, fullgraph, dynamic))
    raise TypeError(f"ember.compile expects a callable or an nn.Module, got {type(model).__name__}")


def optimize(backend: str | CompilerFn = "inductor", nopython: bool = False, **kwargs: Any) -> Callable:
    """The seed tutorials' older spelling: ``ember.optimize("inductor")(fn)``."""
    return functools.partial(compile, backend=backend, fullgraph=nopython, **kwargs)


def disable(fn: Callable[..., Any] | None = None) -> Any:
    """Run ``fn`` eagerly even when compiled code calls it, as ``torch.compiler.disable``: the
    call is a graph break, and neither ``fn`` nor what it calls is traced. Usable as
    ``@ember.disable`` and ``@ember.disable()``."""
    if fn is None:
        return disable

    @functools.wraps(fn)
    def eager(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    eager.__ember_disable__ = True  # type: ignore[attr-defined]
    return eager


def graph_break() -> None:
    """A graph break where compiled code calls it, as torch's own ``graph_break()`` marker (which ember
    recognises too); nothing when it runs eagerly."""


def reset() -> None:
    """Drop every cached compilation; the next call of each compiled function recompiles."""
    reset_all()
    _SHARED.clear()
    pm = REGISTRY.plugin_manager  # plugins already loaded free what they hold (CUDA graphs...)
    if pm is not None:
        pm.hook.ember_reset()
    torch_caches.release()  # and torch's caches that compiling filled
