"""Frame capture: run a function's bytecode symbolically and produce an fx graph plus guards.

:func:`capture` is the entry point used by the runtime on a cache miss. It returns a
:class:`Capture`: the GraphModule (or None when there is no tensor work), the sources of its
inputs, the guards, and the Python source of the expression that rebuilds the return value.

The modules form layers, each importing only those below it (``tests/core/test_import_layers.py``
asserts that no import, even inside a function, closes a circle):

- leaves: ``values`` (the symbolic values), ``sources``, ``compat``, ``torch_ops`` (facts about
  torch's API), ``skips``, ``global_state``, ``eager_checks``; then ``constants`` (a Var's Python
  value and back), ``builder`` (wrapping real values), ``graph``, ``side_effects``, ``state``.
- ``dispatch``: the protocol tables. Each kind of value registers there what calling it does
  (``@handles_call``), reading and storing its attributes (``@handles_attr``,
  ``@handles_store``), iterating over it (``@handles_iter``), its ``len`` (``@handles_len``) and
  its truth (``@handles_truth``); ``dispatch.call``, ``load_attr``, ``store_attr``, ``iterate``,
  ``length`` and ``truthy`` look the handler
  up along the value's class hierarchy, so anything may use them without importing the modules
  that handle them, and no module holds an isinstance chain over kinds.
- one module per kind of value, owning its protocols and how it is rebuilt after the graph:
  ``symbolic`` (sizes), ``tensors`` (attributes, methods, iteration, ``.grad`` stores),
  ``real_values`` and ``attrs`` (real objects known at capture time, ConstVar: truth and
  iteration; attribute reads and stores of modules, classes and instances), ``containers``
  (lists, dicts, sets, tuples, iterators), ``exceptions``, ``contexts`` (context managers),
  ``locks``, ``inline`` (Python functions: run in a child frame made by the caller's
  ``type(frame)``; ``call_dunder``), ``generators`` (generators made by the captured code, their
  body a suspended child frame; ``lazy_iterators``: zip, map... over them, read one item at a
  time; ``generator_outputs``: what becomes of them after the graph), ``user_objects`` (plain Python objects built by the
  capture, HF caches), ``objects`` (objects built over fake tensors), ``supers`` (``super()``),
  ``hooks`` (module hooks), ``numpy_arrays`` (numpy arrays as tensors in the graph, their nodes
  running ``numpy_runtime``), ``autograd_functions`` (user ``torch.autograd.Function.apply`` as one
  node).
- ``ops`` (operators, indexing, membership) and ``builtin_calls`` with ``torch_helpers`` and
  ``copies`` (Python's builtins, torch's helpers and ``copy.deepcopy``, in the
  ``BUILTIN_HANDLERS`` table).
- ``calls``: calls of real values (torch ops, modules, classes, functions), registered for
  ConstVar; ``frame``: decodes instructions and dispatches to the above; ``breaks``, ``resume``
  and ``output`` plan graph breaks and write the code that rebuilds values after the graph.

This module imports every module that registers handlers, so the tables are full before a
capture runs.
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import types
from typing import Any

import torch
import torch.fx

from ..codegen import check_names
from ..errors import GeneratedCodeFailed, Unsupported
from . import contexts, dispatch_modes, global_state
# the modules that register their values' behaviour in the dispatch tables and
# builtin_calls.BUILTIN_HANDLERS: imported here so the tables are full before any capture
from . import (  # noqa: F401
    attrs, block_masks, calls, checkpoint, containers, copies, flex_attention, generator_outputs, generators, hops,
    inline, itertools_calls, lazy_iterators, objects, real_values, supers, symbolic, tensors, torch_helpers,
    transforms, user_objects,
)
from .breaks import ResumeRequest, can_break, plan_break
from .frame import Frame
from .graph import remove_dead_nodes
from .inlined_contexts import RetryCapture, retry_offsets
from .output import OutputBuilder
from .resume import ARG_KINDS, CELL, OPAQUE
from .sources import Constants, DictEntrySource, LocalSource, Source
from .state import CaptureState
from .symbolic import has_symbolic
from .values import CellVar, ConstVar, TensorVar, Var


@dataclasses.dataclass
class Capture:
    graph_module: torch.fx.GraphModule | None
    input_sources: list[Source]
    example_inputs: list[torch.Tensor]
    #: lines that end the runner: ``return <rebuilt value>``, or a graph break's native step
    tail: list[str]
    consts: Constants
    state: CaptureState
    resumes: list[ResumeRequest] = dataclasses.field(default_factory=list)
    break_exc: Unsupported | None = None
    #: False for a graph of size arithmetic only (int inputs made symbolic): it is run as it
    #: is, never given to a backend
    tensor_work: bool = True

    @property
    def guards(self):  # noqa: ANN201 - GuardSet
        return self.state.guards


def capture(fn: types.FunctionType, f_locals: dict[str, Any], allow_breaks: bool = True,
            policy: Any = None) -> Capture:
    """Interpret ``fn`` called with the arguments bound in ``f_locals``; ``policy`` (an
    ember.shapes.ShapePolicy) says which sizes are symbolic."""
    refused: frozenset[int] = frozenset()
    with dispatch_modes.suspended():  # modes that ignore compilation: off while it runs
        while True:
            try:
                return _capture_with_state(fn, f_locals, allow_breaks, policy, refused)
            except RetryCapture as retry:  # an inlined with-block or generator that a break cannot keep
                refused |= retry.offsets


def _capture_with_state(fn: types.FunctionType, f_locals: dict[str, Any], allow_breaks: bool, policy: Any,
                        refused: frozenset[int]) -> Capture:
    state = CaptureState(policy=policy, in_python=refused)
    state.guards.grad_mode()
    state.guards.inference_mode()
    state.guards.deterministic()
    state.guards.autocast()
    mode = dispatch_modes.blocking_mode()
    if mode is not None:  # as torch.compile: this call runs eagerly, under the mode
        state.guards.dispatch_mode()
        exc = Unsupported(f"a TorchDispatchMode ({type(mode).__name__}) is active: a call that is not "
                          "compiled yet runs eagerly under it, as with torch.compile")
        exc.guards = state.guards
        raise exc
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    saved_level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)  # errors on fakes become our Unsupported, not log spam
    saved_state, saved_rng = global_state.snapshot(), global_state.rng_state()
    state.entry_state = saved_state
    try:
        return _capture(state, fn, f_locals, allow_breaks)
    finally:  # what the captured code switched is in the graph: the program's state is as it was
        fake_log.setLevel(saved_level)
        saved_state.restore()
        if not torch.equal(global_state.rng_state(), saved_rng):
            torch.random.set_rng_state(saved_rng)


def _capture(state: CaptureState, fn: types.FunctionType, f_locals: dict[str, Any], allow_breaks: bool) -> Capture:
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        exc = Unsupported(f"{code.co_name} is a generator or coroutine function")
        exc.guards = state.guards
        raise exc
    closure: dict[str, Any] = dict(zip(code.co_freevars, fn.__closure__ or ()))
    special = _special_arguments(state, fn, f_locals)
    for name, var in list(special.items()):
        if isinstance(var, CellVar):  # a cell of the function, passed to its resume function
            closure[name] = special.pop(name)
    lazy = {k: v for k, v in f_locals.items() if k not in special and k not in closure}
    frame = Frame(state, code, fn.__globals__, special, closure, lazy_args=lazy, is_root=True)
    builder = OutputBuilder(state.graph, state.guards.consts)
    resumes: list[ResumeRequest] = []
    reason: Unsupported | None = None
    try:
        result = frame.run()
        builder.live = [result, *state.side_effects.values()]
        generator_outputs.close_abandoned(frame, builder.live)
        shared = builder.share(builder.live)
        body = [*shared, f"    ___result = {builder.expr(result)}", *state.side_effects.replay_lines(builder)]
        makes, fills = builder.cell_lines()
        tail = [*makes, *body, *fills, "    return ___result"]
    except Unsupported as exc:
        exc.guards = state.guards  # what was read before the failure decides the fallback entry
        why_not = can_break(frame, exc) if allow_breaks else "fullgraph=True"
        snap = frame.snapshot
        open_blocks = retry_offsets(snap.stack, list(snap.locals.values())) if allow_breaks and snap else frozenset()
        if open_blocks:
            raise RetryCapture(open_blocks) from exc
        if why_not is not None:
            exc.no_break_reason = why_not
            raise
        state.rollback()
        state.side_effects = frame.snapshot.side_effects
        _truncate(state.graph.graph, frame.snapshot.last_node)
        torch._C._set_grad_enabled(frame.snapshot.grad)
        contexts.close_open_blocks(frame, frame.snapshot.stack)
        builder = OutputBuilder(state.graph, state.guards.consts)
        index = frame.snapshot.instr.index
        next_offset = frame.instrs[index + 1].offset if index + 1 < len(frame.instrs) else -1
        try:
            snap = frame.snapshot
            kept = [*snap.stack, *snap.locals.values(), *state.side_effects.values(), *frame.cells.values()]
            builder.live = [v for v in kept if isinstance(v, Var)]
            generator_outputs.close_abandoned(frame, builder.live)
            plan = plan_break(frame, builder, next_offset, "___callee")
            replay = state.side_effects.replay_lines(builder)  # after the stack is rebuilt, before the step
            makes, fills = builder.cell_lines()  # a closure cell holding what Python cannot rebuild
        except Unsupported as inner:
            gen = getattr(inner, "unforced", None)  # a loop's generator that cannot run ahead: Python makes it
            if gen is not None and gen.made_at not in (None, *state.in_python) and any(v is gen for v in snap.stack):
                raise RetryCapture(frozenset({gen.made_at})) from exc
            exc.no_break_reason = str(inner)
            raise exc from inner
        tail, resumes, reason = makes + plan.prefix + replay + fills + plan.native, plan.resumes, exc
    return _finish(state, builder, tail, resumes, reason)


def _special_arguments(state: CaptureState, fn: types.FunctionType, f_locals: dict[str, Any]) -> dict[str, Any]:
    """A resume function's arguments that the capture must not read as inputs: values made in
    Python at a break, passed along unread, an exception for a handler (guarded on type), and
    the function's cells (read through the argument when used)."""
    result: dict[str, Any] = {}
    for name, kind in getattr(fn, ARG_KINDS, {}).items():
        if name not in f_locals:
            continue
        if kind == CELL:
            result[name] = state.real_cell(f_locals[name], LocalSource(name))
        elif kind == OPAQUE:
            result[name] = contexts.Opaque(LocalSource(name))
        else:
            state.guards.type_match(LocalSource(name), f_locals[name])
            result[name] = ConstVar(f_locals[name], LocalSource(name))
    return result


def _truncate(graph: torch.fx.Graph, last_node: torch.fx.Node | None) -> None:
    """Erase the compute nodes recorded after ``last_node`` (by the instruction that broke)."""
    nodes = list(graph.nodes)
    start = nodes.index(last_node) + 1 if last_node is not None else 0
    for node in reversed(nodes[start:]):
        if node.op != "placeholder":
            graph.erase_node(node)


def _finish(state: CaptureState, builder: OutputBuilder, tail: list[str], resumes: list[ResumeRequest],
            reason: Any) -> Capture:
    graph = state.graph
    graph.output(builder.outputs)
    # a graph goes to the backend when the code did tensor work (even work nothing reads: torch.compile
    # counts its calls before removing dead code) or returns tensors, as torch.compile decides
    tensor_work = any(isinstance(v, TensorVar) for v in builder.outputs) or _tensor_work(graph.graph)
    remove_dead_nodes(graph.graph)
    if any(n.meta.get("mutates") for n in graph.graph.nodes):
        # in-place work on inputs is only right for the aliasing seen at capture time
        state.guards.distinct([s for s, _, v in graph.inputs
                               if isinstance(v, torch.Tensor) and not isinstance(s, DictEntrySource)])
    has_work = tensor_work or any(n.op in ("call_function", "call_method") for n in graph.graph.nodes)
    gm = None
    used: list[tuple[Source, torch.fx.Node, torch.Tensor]] = []
    if has_work:
        # inputs the graph does not read are dropped (their guards stay)
        for source, node, tensor in graph.inputs:
            if node.users:
                used.append((source, node, tensor))
            else:
                graph.graph.erase_node(node)
        root = torch.nn.Module()
        for name, value in graph.constants.items():  # what the graph reads with get_attr
            setattr(root, name, value)
        try:  # fx writes and compiles the graph's Python code here
            gm = torch.fx.GraphModule(root, graph.graph, class_name="EmberGraph")
            check_names(gm.forward)
        except Exception as exc:
            raise GeneratedCodeFailed("graph code", exc, state.guards) from exc
    return Capture(
        graph_module=gm,
        input_sources=[s for s, _, _ in used],
        example_inputs=[t for _, _, t in used],
        tail=tail,
        consts=state.guards.consts,
        state=state,
        resumes=resumes,
        break_exc=reason or None,
        tensor_work=tensor_work,
    )


def _tensor_work(graph: torch.fx.Graph) -> bool:
    """Whether ``graph`` calls anything but arithmetic on symbolic sizes, grad-mode switches and
    calls that give back their argument (``+x``, a 1-d ``flatten``) unchanged."""
    return any(n.op in ("call_function", "call_method") and not has_symbolic(n.meta.get("val"))
               and n.target is not torch._C._set_grad_enabled
               and (n.meta.get("mutates") or not n.meta.get("gives_argument")) for n in graph.nodes)


__all__ = ["Capture", "capture"]
