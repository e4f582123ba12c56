"""The ``tvm`` backend: ``tvm(gm, example_inputs, mode=None, options=None) -> callable``.

Steps for one graph:

1. copy the graph, inline submodules and lift tensor attributes to inputs (``prepare.py``),
   rewrite in-place ops on intermediates out of place;
2. run it once eagerly on clones of the inputs to learn every node's dtype and device (under a
   forked random generator, so that compiling draws no number from the caller's stream);
3. split it into pieces TVM can import and pieces that stay in PyTorch (``support.py``);
4. import, build (or load from the disk cache) and check each TVM piece (``runtime.py``).

Whatever cannot be done keeps PyTorch: an unimportable op stays in PyTorch inside the graph,
a piece that fails to build or to match eager runs eagerly, and a graph that mutates its inputs
runs eagerly as a whole; each with one warning on ``logging.getLogger("ember.tvm")``.

Inference only: when grad mode is on and an input requires grad, the graph runs eagerly with
one warning (the default, ``fallback_on_grad=True``) or raises :class:`GradientsNotSupported`
(``fallback_on_grad=False``).
"""
from __future__ import annotations

import copy
import logging
from collections import Counter
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.fx as fx

from ember.errors import EmberError

from .options import TvmOptions, parse_options
from .prepare import functionalize_inplace, inline_modules, lift_attributes, node_name
from .runtime import TvmPiece
from .support import TvmSupport, partition, record_values, views_of_inputs_returned

log = logging.getLogger("ember.tvm")


class GradientsNotSupported(EmberError):
    """The tvm backend was called with inputs that require grad while grad mode is on."""


class TvmCompiled:
    """The callable the backend returns: the partitioned graph, plus the inference-only rule."""

    def __init__(
        self,
        graph: Callable[..., Any],
        lifted: list[torch.Tensor],
        original: fx.GraphModule,
        options: TvmOptions,
    ) -> None:
        self.graph = graph
        self.lifted = lifted
        self.original = original
        self.options = options
        self._warned_grad = False

    @property
    def tvm_pieces(self) -> list[TvmPiece]:
        """The pieces of the graph handed to TVM (empty when it all runs eagerly)."""
        if not isinstance(self.graph, fx.GraphModule) or self.graph is self.original:
            return []
        return [m for m in self.graph.children() if isinstance(m, TvmPiece)]

    def __call__(self, *args: Any) -> Any:
        if torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in (*args, *self.lifted)
        ):
            if not self.options.fallback_on_grad:
                raise GradientsNotSupported(
                    "the tvm backend is inference-only: call it under torch.no_grad() / "
                    "torch.inference_mode(), or pass options={'fallback_on_grad': True}"
                )
            if not self._warned_grad:
                self._warned_grad = True
                log.warning(
                    "ember.tvm: inputs require grad; running this graph with PyTorch eager "
                    "(the tvm backend is inference-only)"
                )
            return self.original(*args)
        return self.graph(*args, *self.lifted)


def _piece_inputs(gm: fx.GraphModule, inputs: Sequence[Any], names: set[str]) -> dict[str, list]:
    """Run the partitioned graph once (on clones) and record each piece's arguments."""
    seen: dict[str, list] = {}

    class Recorder(fx.Interpreter):
        def call_module(self, target: Any, args: Any, kwargs: Any) -> Any:
            if target in names and target not in seen:
                seen[target] = list(args)
            return super().call_module(target, args, kwargs)

    clones = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        Recorder(gm).run(*clones)
    return seen


def _log_kept(gm: fx.GraphModule, support: TvmSupport) -> None:
    """One warning per graph naming the ops that stay in PyTorch for lack of TVM support."""
    reasons: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            reason = support.reason(node)
            if reason and not reason.startswith(("view of a graph input", "produces a non-tensor")):
                reasons[f"{node_name(node)} ({reason})"] += 1
    if reasons:
        listed = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in sorted(reasons.items()))
        log.warning("ember.tvm: ops kept in PyTorch: %s", listed)


def compile_graph(gm: fx.GraphModule, example_inputs: list[Any], options: TvmOptions) -> Callable[..., Any]:
    """Compile ``gm`` for ``example_inputs``; raises only for reasons to run it all eagerly."""
    work = inline_modules(fx.GraphModule(gm, copy.deepcopy(gm.graph)))
    work, lifted = lift_attributes(work)
    reason = functionalize_inplace(work)
    if reason:
        raise _Eager(reason)
    inputs = [*example_inputs, *lifted]
    infos = record_values(work, inputs)
    support = TvmSupport(infos, views_of_inputs_returned(work))
    _log_kept(work, support)
    fused, names = partition(work, support)
    if not names:
        raise _Eager("no op of this graph can be imported into TVM")
    if len(names) > 1 and not options.partition:
        raise _Eager("graph needs PyTorch between TVM pieces and options['partition'] is False")
    piece_args = _piece_inputs(fused, inputs, set(names))
    for name in names:
        if not any(isinstance(a, torch.Tensor) for a in piece_args[name]):
            continue  # only creates tensors from Python values: cheaper in PyTorch
        piece = TvmPiece(name, getattr(fused, name), options)
        problem = piece.prepare(piece_args[name])
        if problem:
            log.warning("ember.tvm: %s runs in PyTorch: %s", name, problem)
        setattr(fused, name, piece)
    fused.recompile()
    return TvmCompiled(fused, lifted, gm, options)


class _Eager(Exception):
    """Internal: the whole graph runs with PyTorch eager, for the given reason."""


def tvm(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    mode: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """ember backend ``tvm``: compile ``gm`` with Apache TVM (Relax) for inference.

    Returns a callable with ``gm``'s signature and outputs. Never fails for an unsupported
    graph: it then returns a callable running ``gm`` eagerly and logs why. Bad ``mode`` or
    ``options`` raise ``ValueError``.
    """
    opts = parse_options(mode, options)
    gpus = sorted({x.device.index or 0 for x in example_inputs
                   if isinstance(x, torch.Tensor) and x.device.type == "cuda"})
    try:
        # Compiling runs the graph eagerly (to learn its values, then to check each piece): the
        # random numbers it draws must not shift the caller's random stream.
        with torch.random.fork_rng(devices=gpus):
            compiled = compile_graph(gm, list(example_inputs), opts)
    except _Eager as exc:
        log.warning("ember.tvm: graph runs with PyTorch eager: %s", exc)
        return TvmCompiled(gm, [], gm, opts)
    except Exception as exc:  # noqa: BLE001 - never crash the user's program
        log.warning(
            "ember.tvm: graph runs with PyTorch eager: %s: %s",
            type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "",
        )
        return TvmCompiled(gm, [], gm, opts)
    return compiled
