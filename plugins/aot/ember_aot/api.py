"""``aot_autograd``: turns aten-level graph compilers into an ember backend.

The backend it returns takes the torch-level graph the core captured and, per specialization:
analyses it on fake tensors (``analysis``), traces it to a functional aten graph — forward and
backward together when some output needs grad (``trace``) —, splits the joint graph
(``partition``), hands the halves to the caller's compilers, and wraps them (``runtime``).

Specializations. A compiled graph is only valid for the state it was traced in, so the returned
callable keys its compiled plans on: grad mode, which tensor inputs require grad (while grad
mode is on), and the values of non-tensor inputs (make_fx bakes them in as constants). A call
in a new state compiles a new plan (at most ``MAX_VARIANTS``; beyond that it runs eagerly with
a warning). In particular a graph compiled under ``torch.no_grad()`` (inference graph, no
backward) that is later called with grad enabled and inputs requiring grad gets a training
plan, never outputs silently cut off from autograd. Shapes, strides and dtypes are not part of
the key: the core's guards check them before calling the backend. Except for a dynamic graph
(symbolic sizes, issue 25): traced symbolically when the compilers accept it (``dynamic=True``),
one plan per state serves every size; else its plans are specialised per input sizes.

Disk cache. With a ``cache`` (a ``plan_cache.PlanCodec`` from the caller, which can save and
load what its compilers made), each new plan is first looked up on disk and stored after
compiling, so another process calling the same graph in the same state skips tracing,
partitioning and compiling (``plan_cache`` says what the key covers).

Failures. Anything ember_aot cannot trace or replay logs one warning on ``ember.aot`` and the
graph runs eagerly. An exception from the caller's compilers propagates when compiling the
first plan (the core then applies its backend-failure policy); for plans compiled later, at
call time, it is logged and that plan runs eagerly.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import operator
import threading
from typing import Any, Callable, Sequence

import torch
import torch.fx
from ember.settle import Setter, Settling, settle
from ember.shapes import is_dynamic
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from . import plan_cache
from .analysis import analyze
from .bw_variants import BackwardVariants
from .decompositions import DecompositionTable, for_joint, with_required
from .errors import AOTUnsupported
from .grad_groups import split_backward
from .identity import forward_identities
from .partition import min_cut_partition
from .runtime import CompiledPlan, EagerPlan
from .symbolic import (
    allowing_real_constants,
    fake_mode_of,
    SYMBOLIC_TRACING,
    is_symbolic,
    relations_check,
    symbolic_inputs,
)
from .trace import primal_positions, trace_inference, trace_joint

log = logging.getLogger("ember.aot")

MAX_VARIANTS = 8
_REQUIRES_GRAD = operator.attrgetter("requires_grad")

AtenCompiler = Callable[[torch.fx.GraphModule, list], Callable[..., Sequence[torch.Tensor]]]
PartitionFn = Callable[..., tuple[torch.fx.GraphModule, torch.fx.GraphModule]]
Backend = Callable[..., Callable[..., Any]]


@dataclasses.dataclass(frozen=True)
class AOTConfig:
    fw_compiler: AtenCompiler
    bw_compiler: AtenCompiler
    inference_compiler: AtenCompiler
    partition_fn: PartitionFn
    decompositions: Callable[[], DecompositionTable]  # built on first use: a plan from disk needs none
    keep_inference_input_mutations: bool
    cache: plan_cache.PlanCodec | None = None
    dynamic: bool = False  # the compilers take graphs with symbolic sizes
    joint_pass: Callable[[torch.fx.GraphModule], Any] | None = None  # rewrites a joint graph in place


class _CompilerError(Exception):
    """Wraps an exception raised by a user-supplied compiler."""


def _placeholder_vals(gm: torch.fx.GraphModule) -> list[torch.Tensor]:
    return [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]


def _run_compiler(compiler: AtenCompiler, gm: torch.fx.GraphModule) -> Callable:
    try:
        return compiler(gm, _placeholder_vals(gm))
    except Exception as exc:
        raise _CompilerError(exc) from exc


def _records_grad(args: Sequence[Any]) -> bool:
    """Whether a call on ``args`` in the current grad mode needs the autograd (joint) trace."""
    return torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)


def compile_plan(gm: torch.fx.GraphModule, args: Sequence[Any], config: AOTConfig,
                 symbolic: bool = False) -> CompiledPlan:
    """Trace, partition and compile ``gm`` for the state of ``args`` and the current grad mode;
    ``symbolic``: with the symbolic sizes of ``gm``'s placeholders, for every size at once."""
    if not symbolic:
        # a shape environment with static sizes: higher-order operators (while_loop) need one
        # for the unbacked sizes they make, and nothing else becomes symbolic
        static = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv(), static_shapes=True)
        return _compile_plan(gm, args, config, static, False)
    mode = fake_mode_of(gm)
    with allowing_real_constants(mode):
        return _compile_plan(gm, symbolic_inputs(gm, args, mode), config, mode, True)


def _compile_plan(gm: torch.fx.GraphModule, args: Sequence[Any], config: AOTConfig,
                  mode: FakeTensorMode, symbolic: bool) -> CompiledPlan:
    """``compile_plan`` with ``args`` the values to trace with (fakes of ``mode`` when symbolic)."""
    analysis = analyze(gm, args, mode, torch.is_grad_enabled())
    if symbolic and analysis.needs_autograd and not SYMBOLIC_TRACING:
        raise AOTUnsupported(f"torch {torch.__version__} traces joint graphs with symbolic sizes wrongly "
                             "(ember_aot.symbolic): this graph's calls that need gradients run eagerly")
    traceable = forward_identities(gm, analysis.identities)
    tensor_pos = primal_positions(args)
    symbolic_args = list(args) if symbolic else None
    if not analysis.needs_autograd:
        traced = trace_inference(
            traceable, args, analysis, config.decompositions(), mode,
            config.keep_inference_input_mutations,
        )
        fw = _run_compiler(config.inference_compiler, traced.gm)
        return CompiledPlan(
            gm, analysis, tensor_pos, traced.mutated_inputs, traced.inputs_mutated_in_graph,
            traced.num_fwd_outputs, fw, symbolic_inputs=symbolic_args,
        )
    traced = trace_joint(traceable, args, analysis, for_joint(config.decompositions()), mode)
    if config.joint_pass is not None:
        config.joint_pass(traced.gm)
    joint_inputs = _placeholder_vals(traced.gm)
    fw_gm, bw_gm = config.partition_fn(
        traced.gm, joint_inputs, num_fwd_outputs=traced.num_fwd_outputs
    )
    fw = _run_compiler(config.fw_compiler, fw_gm)
    groups = split_backward(traced.gm, len(tensor_pos), traced.num_fwd_outputs, traced.diff_outputs,
                            traced.grad_inputs, bw_gm)
    bw = [_run_compiler(config.bw_compiler, part) for _, part in groups]
    return CompiledPlan(
        gm, analysis, tensor_pos, traced.mutated_inputs, [], traced.num_fwd_outputs, fw, bw,
        traced.diff_outputs, traced.tangent_layouts, traced.grad_inputs, [g for g, _ in groups],
        traced.grad_tangents,
        BackwardVariants([part for _, part in groups], lambda part: _run_compiler(config.bw_compiler, part)),
        symbolic_args,
    )


class AOTCompiledGraph:
    """The callable the backend returns: dispatches each call to the plan for its state.

    A dynamic graph (symbolic sizes on its placeholders, see ``symbolic``) is traced once with
    those sizes when the compilers take symbolic graphs (``dynamic=True``): its plans serve every
    size, and the varying ints are not part of the key. Otherwise its plans are specialised per
    concrete signature: the input sizes and strides join the key."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], config: AOTConfig):
        self.gm = gm
        self.config = config
        self.plans: dict[Any, CompiledPlan | EagerPlan | _CheckedPlan] = {}
        self._runs: dict[Any, Callable] = {}  # key -> its plan, or what the plan only calls
        self._holders = Settling()  # callers that call the first key's run directly
        self._lock = threading.Lock()
        self._overflow_warned = False
        dynamic = is_dynamic(gm)
        # before torch 2.13 only graphs without autograd are traced symbolically (symbolic_tracing)
        self.symbolic = dynamic and config.dynamic and (SYMBOLIC_TRACING or not _records_grad(example_inputs))
        self._per_shape = dynamic and not self.symbolic
        vals = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
        self._sym_pos = frozenset(i for i, v in enumerate(vals) if self.symbolic and is_symbolic(v)
                                  and isinstance(v, torch.SymInt))
        self._plan_for(self._key(example_inputs), example_inputs, first=True)

    def _key(self, args: Sequence[Any]) -> Any:
        grad = torch.is_grad_enabled()
        tensor = torch.Tensor
        if all(map(isinstance, args, itertools.repeat(tensor))):  # the usual case, in C loops
            key = grad, tuple(map(_REQUIRES_GRAD, args)) if grad else len(args)
        else:
            sym = self._sym_pos
            key = tuple([(a.requires_grad and grad) if isinstance(a, tensor)
                         else (type(a), None if i in sym else a) for i, a in enumerate(args)])
            try:
                hash(key)
            except TypeError:
                return None
            key = grad, key
        if self._per_shape:
            key = key, tuple([(a.shape, a.stride()) for a in args if isinstance(a, tensor)])
        return key

    def _plan_for(self, key: Any, args: Sequence[Any], first: bool = False):
        with self._lock:
            plan = self.plans.get(key)
            if plan is not None:
                return plan
            if key is None:
                return self._eager("a non-tensor input is not hashable")
            if len(self.plans) >= MAX_VARIANTS:
                if not self._overflow_warned:
                    log.warning("ember_aot: more than %d specializations; running eagerly", MAX_VARIANTS)
                    self._overflow_warned = True
                return EagerPlan(self.gm)
            try:
                plan = self._load_or_compile(args, first)
            except _CompilerError as exc:
                if first:
                    raise exc.__cause__ from None
                plan = self._eager(f"compiler failed: {type(exc.__cause__).__name__}: {exc.__cause__}")
            except Exception as exc:  # anything we cannot trace runs eagerly
                why = str(exc) if isinstance(exc, AOTUnsupported) else f"{type(exc).__name__}: {exc}"
                plan = self._eager(why)
            self.plans[key] = plan
            return plan

    def _load_or_compile(self, args: Sequence[Any], first: bool) -> CompiledPlan | _CheckedPlan:
        if self.symbolic:
            return self._compile_symbolic(args, first)
        codec = self.config.cache
        path = plan_cache.plan_path(self.gm, args, codec) if codec is not None else None
        if path is not None:
            plan = plan_cache.fetch(path, self.gm, codec)
            if plan is not None:
                return plan
        plan = compile_plan(self.gm, args, self.config)
        if path is not None:
            plan_cache.store(path, plan, codec)
        return plan

    def _compile_symbolic(self, args: Sequence[Any], first: bool) -> CompiledPlan | _CheckedPlan:
        """A symbolic plan (not stored on disk: its layouts are expressions of this process's
        symbols). The core turns the relations tracing adds to the shape environment into guards
        after the first compile; a plan compiled later (another grad state) that adds relations
        checks them on each call instead."""
        env = fake_mode_of(self.gm).shape_env
        before = len(env.guards)
        plan = compile_plan(self.gm, args, self.config, symbolic=True)
        added = [env.replace(g.expr) for g in env.guards[before:]]
        if first or not added:
            return plan
        return _CheckedPlan(plan, relations_check(added, plan.symbolic_inputs), self.gm)

    def _eager(self, why: str) -> EagerPlan:
        log.warning("ember_aot: cannot compile this graph, running it eagerly: %s", why)
        return EagerPlan(self.gm)

    def __call__(self, *args: Any) -> Any:
        key = self._key(args)
        run = self._runs.get(key)
        if run is None:
            run = self._run_for(key, args)
        return run(*args)

    def _run_for(self, key: Any, args: Sequence[Any]) -> Callable:
        """The plan for ``key``, kept as what calls with that key run. Without grad, a plan that
        only calls its forward graph is passed over once that graph settles (``ember.settle``)."""
        plan = self._plan_for(key, args)
        if key is not None and self.plans.get(key) is plan:
            first = not self._runs  # the holders' key (none hold a graph compiled per shape)
            self._runs[key] = plan
            if first:
                self._holders.done(plan)
            if not torch.is_grad_enabled() and isinstance(plan, CompiledPlan) and plan.calls_fw_as_is(len(args)):
                settle(plan.fw, functools.partial(self._use, key, first))
        return plan

    def _use(self, key: Any, first: bool, run: Callable) -> None:
        self._runs[key] = run
        if first:
            self._holders.done(run)

    def settle(self, setter: Setter) -> None:
        """Callers call the first call's plan directly (``ember.settle``): the calls of a guard
        entry all have one key, grad state and sizes being guarded; not where sizes are part of
        the key (a dynamic graph compiled per shape)."""
        if not self._per_shape:
            self._holders.add(setter)


class _CheckedPlan:
    """A symbolic plan valid where size relations the core does not guard hold; eager elsewhere."""

    def __init__(self, plan: CompiledPlan, holds: Callable[[Sequence[Any]], bool], gm: torch.fx.GraphModule):
        self.plan, self.holds, self.gm = plan, holds, gm
        self._warned = False

    def __call__(self, *args: Any) -> Any:
        if self.holds(args):
            return self.plan(*args)
        if not self._warned:
            log.warning("ember_aot: sizes outside the relations this graph was compiled for; "
                        "running it eagerly for such calls")
            self._warned = True
        return self.gm(*args)


def aot_autograd(
    fw_compiler: AtenCompiler,
    bw_compiler: AtenCompiler | None = None,
    partition_fn: PartitionFn | None = None,
    decompositions: DecompositionTable | Callable[[], DecompositionTable] | None = None,
    inference_compiler: AtenCompiler | None = None,
    keep_inference_input_mutations: bool = False,
    cache: plan_cache.PlanCodec | None = None,
    dynamic: bool = False,
    joint_pass: Callable[[torch.fx.GraphModule], Any] | None = None,
) -> Backend:
    """A backend ``(gm, example_inputs, **kw) -> callable`` built on aten-level compilers.

    ``fw_compiler`` / ``bw_compiler`` (default: ``fw_compiler``) get the forward / backward
    halves of the joint graph; ``inference_compiler`` (default: ``fw_compiler``) gets the
    forward-only graph used when nothing needs grad. Each is called as ``compiler(gm,
    example_inputs)`` with a functional aten GraphModule (flat tensor placeholders, tuple output,
    ``node.meta["val"]`` fakes) and fake example inputs, and returns a callable taking the flat
    inputs and returning a tuple/list. ``partition_fn`` defaults to ``min_cut_partition``;
    ``decompositions`` (a table, or a function returning one when first needed) to
    ``default_decompositions()``. With ``keep_inference_input_mutations``
    the inference graph keeps its ``copy_`` into mutated inputs instead of returning the new
    values for the runtime to write back. ``cache`` enables the disk cache of plans (see the
    module docstring). ``dynamic``: the compilers take graphs with symbolic sizes (placeholders'
    ``meta["val"]`` with ``SymInt`` sizes, ``SymInt`` inputs, size arithmetic as nodes), so a
    dynamic graph is traced and compiled once for every size; without it, a dynamic graph is
    compiled per concrete input signature. ``joint_pass(joint_gm)`` may rewrite the joint graph of
    forward and backward in place before it is split (its outputs' sizes, strides and meaning
    kept; the values passed between the halves are then what it made them; a node it marks
    ``meta[partition.SAVE]`` is saved for the backward, not recomputed there). Plans are stored
    after it: a ``cache`` codec's salt must change when the pass does (ember's inductor salts
    with its own sources, the pass among them).
    """
    config = AOTConfig(
        fw_compiler=fw_compiler,
        bw_compiler=bw_compiler or fw_compiler,
        inference_compiler=inference_compiler or fw_compiler,
        partition_fn=partition_fn or min_cut_partition,
        decompositions=functools.lru_cache(None)(
            lambda: with_required(decompositions() if callable(decompositions) else decompositions)),
        keep_inference_input_mutations=keep_inference_input_mutations,
        cache=cache,
        dynamic=dynamic,
        joint_pass=joint_pass,
    )

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any):
        return AOTCompiledGraph(gm, example_inputs, config)

    return backend
