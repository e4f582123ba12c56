"""A compiled function: its cache of guarded entries, and what happens on a miss.

Hot path: bind the arguments, try each entry's guard (newest first), run the first that
passes with the graph inputs its guard returned. On a miss: capture the function, hand the
graph to the backend, build an entry from the guards and the generated runner. Capture failures
become an eager entry guarded by what the capture read before failing, so they are paid once;
with ``fullgraph=True`` they raise.
"""
from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
import types
import warnings
import weakref
from typing import Any, Callable, NamedTuple

import torch
import torch.autograd.profiler as autograd_profiler

from . import config, distributed, stance, torch_caches
from .capture import capture, dispatch_modes
from .capture.breaks import ResumeRequest
from .capture.calls import has_hooks
from .capture.hooks import has_backward_hooks
from .capture.resume import make_resume_function
from .capture.skips import never_traced
from .codegen import make_binder, make_eager_caller, make_runner
from .ddp_split import compile_by_buckets
from .errors import BackendCompilerFailed, GeneratedCodeFailed, Unsupported
from .first_call import check_first_call
from .frame_skip import runs_as_python
from .interrupts import safe_interrupts
from .shape_guards import add_shape_guards
from .settle import settle
from .shapes import PerShapeCache, ShapePolicy, is_dynamic
from .tracebacks import pass_through, register_resume, shown_as_user_code

log_recompiles = logging.getLogger("ember.recompiles")
log_breaks = logging.getLogger("ember.graph_breaks")
log_graph = logging.getLogger("ember.graph")
log_guards = logging.getLogger("ember.guards")
log_fallback = logging.getLogger("ember.fallback")

_ALL: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


#: callbacks ``(event, details)`` told about graphs, breaks, fallbacks and when capture starts and
#: ends ("capturing", active=True/False) (used by explain)
OBSERVERS: list[Callable[[str, dict], None]] = []


def _notify(event: str, **details: Any) -> None:
    for observer in list(OBSERVERS):
        observer(event, details)


class OptimizedModuleLike:
    """Marker base for modules that already call compiled code (ember's OptimizedModule)."""


class Entry(NamedTuple):
    guard: Callable[[dict], "tuple | None"]  # the graph inputs when the entry applies, else None
    run: Callable[[dict, tuple], Any]
    reasons: Callable[[dict], list[str]]
    graph_module: torch.fx.GraphModule | None
    guard_descriptions: list[str]


def format_unsupported(exc: Unsupported) -> str:
    """``reason`` plus the user stack, outermost frame first, with source lines."""
    lines = [str(exc)]
    for filename, line, name, source_line in reversed(getattr(exc, "user_stack", [])):
        lines.append(f'  File "{filename}", line {line}, in {name}')
        if source_line:
            lines.append(f"    {source_line}")
    return "\n".join(lines)


class CompiledFunction:
    """Compilation state of one Python function under one backend configuration."""

    def __init__(self, fn: types.FunctionType, backend: "BackendChoice", fullgraph: bool,
                 dynamic: bool | None = None) -> None:
        self.fn = fn
        self.backend = backend
        self.fullgraph = fullgraph
        self.policy = ShapePolicy(dynamic)
        self.entries: list[Entry] = []
        self.bind = make_binder(fn)
        self.call_eager = make_eager_caller(fn)
        self.lock = threading.RLock()
        self.limit_warned = False
        self.compile_times: list[float] = []
        self.fallback_reasons: list[str] = []
        self.break_reasons: list[str] = []
        self.resumes: dict[tuple, Callable] = {}
        self.callees: "weakref.WeakKeyDictionary[Any, Callable]" = weakref.WeakKeyDictionary()
        self.warned: "weakref.WeakSet[Any]" = weakref.WeakSet()  # modules whose eager calls were said
        self.parent: CompiledFunction | None = None
        _ALL.add(self)

    @property
    def name(self) -> str:
        code = self.fn.__code__
        return f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"

    def reset(self) -> None:
        with self.lock:
            self.entries.clear()
            self.resumes.clear()
            self.callees.clear()
            self.limit_warned = False

    def miss(self, L: dict) -> Any:
        with self.lock:
            for entry in self.entries:  # another thread may have compiled it meanwhile
                inputs = entry.guard(L)
                if inputs is not None:
                    return entry.run(L, inputs)
            if self.parent is not None and not self.entries and runs_as_python(self.fn, L):
                return self.call_eager(L)  # a resume function torch.compile would not trace (frame_skip)
            if stance.STATE.name == "eager_on_recompile":
                return self.call_eager(L)
            if stance.STATE.name == "fail_on_recompile":
                raise stance.recompile_error(self.name, self.entries[0].reasons(L) if self.entries else [])
            if len(self.entries) >= config.cache_size_limit:
                if not self.limit_warned:
                    self.limit_warned = True
                    warnings.warn(
                        f"ember: {self.name} was recompiled {len(self.entries)} times "
                        f"(cache_size_limit={config.cache_size_limit}); it now runs eagerly. "
                        f"Last reason: {'; '.join(self.entries[0].reasons(L)) or 'unknown'}",
                        stacklevel=3,
                    )
                return self.call_eager(L)
            if self.entries and (OBSERVERS or log_recompiles.isEnabledFor(logging.INFO)):
                reasons = self.entries[0].reasons(L)
                log_recompiles.info("recompiling %s: %s", self.name, "; ".join(reasons) or "no guard failed")
                _notify("recompile", function=self.name, reasons=reasons)
            with safe_interrupts():  # a Ctrl-C leaves no half-imported package or thread behind
                with dispatch_modes.suspended():  # a user's mode that ignores compilation sees none of it
                    entry = self._compile(L)
                self.entries.insert(0, entry)
                inputs = entry.guard(L)
                if inputs is None:  # a guard that fails on the call it was made from: an ember bug
                    log_guards.warning("the new guards of %s fail on the call that made them (%s); running "
                                       "this call eagerly", self.name, "; ".join(entry.reasons(L)) or "unknown")
                    return self.call_eager(L)
                return entry.run(L, inputs)

    def _compile(self, L: dict) -> Entry:
        start = time.perf_counter()
        torch_caches.compiling()
        _notify("capturing", active=True)
        try:
            cap = capture(self.fn, L, allow_breaks=not self.fullgraph, policy=self.policy)
        except Unsupported as exc:
            return self._fallback_entry(exc)
        finally:
            _notify("capturing", active=False)
        if cap.break_exc is not None:
            self._note_break(cap.break_exc)
        gm = cap.graph_module
        compiled = None
        if gm is not None:
            if log_graph.isEnabledFor(logging.INFO):
                log_graph.info("graph of %s:\n%s", self.name, gm.print_readable(print_output=False))
            if not cap.tensor_work:  # only arithmetic on symbolic ints or grad-mode switches: no backend
                compiled = gm.forward
            elif is_dynamic(gm) and not self.backend.dynamic:  # compiled per concrete shape
                compiled = PerShapeCache(self.backend.compile, gm, cap.example_inputs, self.backend.name)
            elif config.optimize_ddp and distributed.active_ddp() is not None:
                compiled = compile_by_buckets(gm, cap.example_inputs, self.backend.compile, distributed.active_ddp())
            else:
                compiled = self.backend.compile(gm, cap.example_inputs)
            compiled = _restore_grad_mode_on_error(check_first_call(compiled, gm, self.backend.name), gm)
        what = "shape guards"
        try:
            add_shape_guards(cap.guards, cap.state.graph)  # after the backend: its guards too
            what = "resume function"
            namespace = dict(cap.consts.values)
            if cap.resumes:
                namespace["___callee"] = self.callee
                for request in cap.resumes:
                    namespace[request.const_name] = self.resume_function(request)
            what = "runner"
            break_stack = getattr(cap.break_exc, "user_stack", None)  # innermost frame first
            break_line = break_stack[-1][1] if break_stack else None
            runner = make_runner(compiled, cap.tail, namespace, self.fn.__code__, break_line)
            if compiled is not None:  # once the layers around the graph step aside, call past them
                settle(compiled, functools.partial(runner.__globals__.__setitem__, "___compiled"))
            what = "guard"
            guard, reasons = cap.guards.compile(cap.input_sources)
        except Exception as exc:
            return self._fallback_entry(GeneratedCodeFailed(what, exc, cap.guards))
        if gm is not None and cap.tensor_work:
            _notify("graph", graph=gm, function=self.name, guards=cap.guards.describe())
        if log_guards.isEnabledFor(logging.INFO):
            log_guards.info("guards of %s:\n  %s", self.name, "\n  ".join(cap.guards.describe()))
        self.compile_times.append(time.perf_counter() - start)
        _notify("compiled", function=self.name, seconds=self.compile_times[-1],
                source=(self.fn.__code__.co_filename, self.fn.__code__.co_firstlineno))
        return Entry(guard, runner, reasons, gm, cap.guards.describe())

    def _note_break(self, exc: Unsupported) -> None:
        message = format_unsupported(exc)
        self.break_reasons.append(message)
        log_breaks.info("graph break in %s: %s", self.name, message)
        _notify("break", function=self.name, reason=str(exc), message=message,
                user_stack=list(reversed(getattr(exc, "user_stack", []))))

    def resume_function(self, request: ResumeRequest) -> Callable:
        """The compiled resume function for a break point, made once per break point."""
        key = (request.offset, request.layout, request.local_names, request.opaque_locals)
        wrapper = self.resumes.get(key)
        if wrapper is None:
            fn = make_resume_function(self.fn, request.offset, request.layout, request.local_names,
                                      request.opaque_locals)
            register_resume(fn.__code__)
            child = CompiledFunction(fn, self.backend, fullgraph=False, dynamic=self.policy.dynamic)
            child.parent = self
            wrapper = self.resumes[key] = make_wrapper(child)
        return wrapper

    def callee(self, fn: Any) -> Any:
        """What a broken call site calls: an ember-compiled version of Python code, else ``fn``."""
        module = getattr(fn, "__module__", None)
        if isinstance(module, str) and module.partition(".")[0] == "torch" and not isinstance(fn, torch.nn.Module):
            return fn  # torch's own Python code (autograd, hooks) runs as it is
        if never_traced(fn) is not None:
            return fn
        if isinstance(fn, types.FunctionType) and fn.__code__.co_flags & _GENERATOR_FLAGS:
            return fn  # a generator (made in Python at a break: generator_outputs): nothing to capture
        if isinstance(fn, types.FunctionType) and not hasattr(fn, "__ember__"):
            compiled = self.callees.get(fn)
            if compiled is None:
                compiled = self.callees[fn] = make_wrapper(CompiledFunction(fn, self.backend, False, self.policy.dynamic))
            return compiled
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            inner = self.callee(fn.__func__)
            return types.MethodType(inner, fn.__self__) if inner is not fn.__func__ else fn
        if isinstance(fn, torch.nn.Module) and distributed.native_reason(fn) is not None:
            return self._distributed_call(fn)
        if isinstance(fn, torch.nn.Module) and has_backward_hooks(fn):
            if fn not in self.warned:  # said once per module: its calls run eagerly
                self.warned.add(fn)
                warnings.warn(f"ember: {type(fn).__name__} has backward hooks (register_full_backward_hook), "
                              "which a graph cannot hold; its calls run eagerly", stacklevel=3)
            return fn
        if isinstance(fn, torch.nn.Module) and not isinstance(fn, OptimizedModuleLike) and has_hooks(fn):
            if getattr(self.fn, "__ember_calls__", None) is fn:
                return fn  # the break is inside this module's own call: it runs as it is
            compiled = self.callees.get(fn)
            if compiled is None:  # captured from its __call__, so that the hooks are inlined
                compiled = self.callees[fn] = make_wrapper(
                    CompiledFunction(trampoline(fn), self.backend, False, self.policy.dynamic))
            return compiled
        if isinstance(fn, torch.nn.Module) and not isinstance(fn, OptimizedModuleLike):
            forward = type(fn).forward
            if isinstance(forward, types.FunctionType) and type(fn).__call__ is torch.nn.Module.__call__:
                # one compiled forward per class, not per instance: modules are guarded on their
                # class and structure, so a fresh model of the same structure reuses its entries
                compiled = self.callees.get(forward)
                if compiled is None:
                    cf = CompiledFunction(forward, self.backend, fullgraph=False, dynamic=self.policy.dynamic)
                    compiled = self.callees[forward] = make_wrapper(cf)
                return types.MethodType(compiled, fn)
        return fn

    def _distributed_call(self, module: torch.nn.Module) -> Any:
        """A DDP or FSDP2 module called at a break: it runs natively around the compiled
        forward of the module it wraps (see ``ember.distributed``)."""
        inner = distributed.wrapped_module(module)
        forward = type(inner).forward
        if isinstance(inner, OptimizedModuleLike) or "forward" in inner.__dict__ \
                or not isinstance(forward, types.FunctionType):
            return module  # already compiled, or a forward of its own: it runs as it is
        compiled = self.callees.get(forward)
        if compiled is None:
            cf = CompiledFunction(forward, self.backend, fullgraph=False, dynamic=self.policy.dynamic)
            compiled = self.callees[forward] = make_wrapper(cf)
        return functools.partial(distributed.call_with_forward, module, types.MethodType(compiled, inner))

    def _fallback_entry(self, exc: Unsupported) -> Entry:
        message = format_unsupported(exc)
        if getattr(exc, "no_break_reason", None) and exc.no_break_reason != "fullgraph=True":
            message += f"\n(no graph break possible: {exc.no_break_reason})"
        if self.fullgraph:
            if getattr(exc, "uncaught", False):  # the code raises for these inputs: Python raises it, as eager
                return self._eager_entry(exc, self._raising(message, exc))
            raise Unsupported(f"ember could not capture {self.name} as one graph (fullgraph=True):\n{message}") from exc
        self.fallback_reasons.append(message)
        log_breaks.info("%s runs eagerly: %s", self.name, message)
        _notify("fallback", function=self.name, reason=str(exc), message=message,
                user_stack=list(reversed(getattr(exc, "user_stack", []))))
        if config.warn_on_fallback:
            warnings.warn(f"ember: {self.name} runs eagerly: {message}", stacklevel=4)
        return self._eager_entry(exc, self.call_eager)

    def _eager_entry(self, exc: Unsupported, run_eagerly: Callable[[dict], Any]) -> Entry:
        guards = exc.guards
        try:
            guard, reasons = guards.compile()
        except Exception:  # not even this guard builds: the function runs eagerly from now on
            log_fallback.info("the guard of %s failed to build", self.name, exc_info=True)
            guard, reasons = (lambda L: ()), (lambda L: [])
        return Entry(guard, lambda L, _inputs: run_eagerly(L), reasons, None, guards.describe())

    def _raising(self, message: str, exc: Unsupported) -> Callable[[dict], Any]:
        """fullgraph=True over code that raises uncaught for these inputs (no graph to make): each
        call runs in Python and raises what eager raises; one that returns was not one graph."""
        call_eager, name = self.call_eager, self.name

        def run(L: dict) -> Any:
            call_eager(L)
            raise Unsupported(f"ember could not capture {name} as one graph (fullgraph=True):\n{message}") from exc
        return run


class BackendChoice:
    """A resolved backend plus the options given to ``ember.compile``."""

    def __init__(self, name: str, compiler: Callable, accepts_options: bool, mode: str | None,
                 options: dict | None, dynamic: bool = False) -> None:
        self.name = name
        self.dynamic = dynamic  # the backend takes graphs with symbolic sizes (BackendSpec.dynamic)
        self.compiler = compiler
        self.accepts_options = accepts_options
        self.mode = mode
        self.options = dict(options or {})

    def compile(self, gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable:
        try:
            if self.accepts_options:
                compiled = self.compiler(gm, example_inputs, mode=self.mode, options=self.options)
            else:
                compiled = self.compiler(gm, example_inputs)
            if not callable(compiled):
                raise TypeError(f"backend returned {type(compiled).__name__}, not a callable")
            return compiled
        except Exception as exc:
            if not config.suppress_errors:
                raise BackendCompilerFailed(f"backend {self.name!r} failed: {type(exc).__name__}: {exc}") from exc
            warnings.warn(
                f"ember: backend {self.name!r} failed to compile a graph ({type(exc).__name__}: {exc}); "
                "running that graph eagerly", stacklevel=5,
            )
            log_fallback.info("backend %s failed", self.name, exc_info=True)
            return gm.forward


def _restore_grad_mode_on_error(compiled: Callable, gm: torch.fx.GraphModule) -> Callable:
    """A graph that switches grad mode (a ``no_grad`` block) and raises half-way (an index out
    of range) leaves the mode as the with-blocks' ``__exit__`` would in eager: as it found it."""
    if not any(n.target is torch._C._set_grad_enabled for n in gm.graph.nodes):
        return compiled

    def run(*inputs: Any) -> Any:
        grad = torch.is_grad_enabled()
        try:
            return compiled(*inputs)
        except BaseException:
            torch._C._set_grad_enabled(grad)
            raise

    return run


def trampoline(self: Callable[..., Any]) -> types.FunctionType:
    """A function that calls ``self``: capture starts here, so module hooks are honoured."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return self(*args, **kwargs)

    call.__name__ = call.__qualname__ = getattr(self, "__name__", type(self).__name__)
    call.__ember_calls__ = self  # type: ignore[attr-defined]
    return call


def _run_profiled(cf: CompiledFunction, L: dict) -> Any:
    """A call while torch.profiler records: the compiled call is one range named after the user's
    function and the entry that ran (``ember: f graph 0``, in the order they were compiled), a miss
    ``ember: f capture and compile``, so that a trace shows which compiled code the time went to."""
    name = f"ember: {cf.fn.__qualname__}"
    for k, entry in enumerate(cf.entries):
        inputs = entry.guard(L)
        if inputs is not None:
            with torch.profiler.record_function(f"{name} graph {len(cf.entries) - 1 - k}"):
                return entry.run(L, inputs)
    with torch.profiler.record_function(f"{name} capture and compile"):
        return cf.miss(L)


def make_wrapper(cf: CompiledFunction, bound_self: Any = None, has_self: bool = False) -> Callable:
    """The function users call: binder, guards, runner; the miss path on the slow side."""
    entries = cf.entries
    bind = cf.bind
    miss = cf.miss
    fn = cf.fn
    state = stance.STATE
    # torch.compile tracing through this wrapper (transformers' generate compiles the model's call
    # on its own): the original function runs, so torch's tracer sees the user's code, not ember's
    traced_by_torch = torch.compiler.is_dynamo_compiling

    if has_self:
        def compiled_method(*args: Any, **kwargs: Any) -> Any:
            if state.force_eager or traced_by_torch():
                return fn(bound_self, *args, **kwargs)
            try:
                L = bind(bound_self, *args, **kwargs)
                if autograd_profiler._is_profiler_enabled:
                    return _run_profiled(cf, L)
                for entry in entries:
                    inputs = entry.guard(L)
                    if inputs is not None:
                        return entry.run(L, inputs)
                return miss(L)
            except Exception as exc:
                raise shown_as_user_code(exc)  # the user's files and lines, see tracebacks.py

        wrapper = compiled_method
    else:
        def compiled_function(*args: Any, **kwargs: Any) -> Any:
            if state.force_eager or traced_by_torch():
                return fn(*args, **kwargs)
            try:
                L = bind(*args, **kwargs)
                if autograd_profiler._is_profiler_enabled:
                    return _run_profiled(cf, L)
                for entry in entries:
                    inputs = entry.guard(L)
                    if inputs is not None:
                        return entry.run(L, inputs)
                return miss(L)
            except Exception as exc:
                raise shown_as_user_code(exc)  # the user's files and lines, see tracebacks.py

        wrapper = compiled_function
    wrapper.__wrapped__ = cf.fn  # type: ignore[attr-defined]
    wrapper.__ember__ = cf  # type: ignore[attr-defined]
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(wrapper, attr, getattr(cf.fn, attr))
    return wrapper


# frames that only pass a call along, left out of tracebacks
pass_through(make_wrapper, CompiledFunction.miss, CompiledFunction._fallback_entry, CompiledFunction._eager_entry,
             CompiledFunction._raising, _restore_grad_mode_on_error, trampoline)


def reset_all() -> None:
    for cf in list(_ALL):
        cf.reset()
