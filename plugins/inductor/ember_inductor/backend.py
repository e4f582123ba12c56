"""Backend ``inductor``: torch-level fx graph -> aten graph(s) -> fused C++ kernels.

Training and inference go through ``ember_aot.aot_autograd`` (forward/backward split, functional
aten graphs with our decomposition table), with its disk cache of compiled plans: a second
process compiling the same graph loads the wrapper and kernels instead (``plan_codec``).
Without ember_aot, inference graphs are traced here with ``make_fx`` + ``functionalize``;
graphs that need autograd then run eagerly (one warning).
A graph whose compilation fails runs its aten graph eagerly with one warning naming the error,
unless ``options={"strict": True}`` or ``EMBER_INDUCTOR_STRICT=1``. Kernels build on a
background thread while ember_aot goes on to the next graph (``compile_aten_graph(defer=True)``);
a build that fails there is reported at the graph's first call (an error under ``strict``).
On CPUs, a graph that runs slower compiled than eager in its first calls falls back to eager
(``measured``).
"""
from __future__ import annotations

import functools
import logging
import os
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.utils import _pytree as pytree

from . import debug, layout, measured
from .codegen.language import kernel_language
from .decompositions import decompositions
from .flex_attention import decompose_flex_attention
from .trace import trace_inference

log = logging.getLogger("ember.inductor")


def _strict(options: dict | None) -> bool:
    return bool((options or {}).get("strict")) or os.environ.get("EMBER_INDUCTOR_STRICT", "") not in ("", "0")


def make_graph_compiler(options: dict | None = None) -> Callable:
    """``(aten_gm, example_inputs) -> callable`` with the per-graph eager fallback."""
    strict = _strict(options)

    def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        from .compile_fx import compile_aten_graph
        try:
            return compile_aten_graph(gm, example_inputs, defer=True, strict=strict)
        except Exception as exc:
            if strict:
                raise
            log.warning("ember_inductor could not compile a graph (%s: %s); running it with aten",
                        type(exc).__name__, exc)

            def run(*args: Any) -> Any:
                out = gm(*args)
                return tuple(out) if isinstance(out, (list, tuple)) else (out,)
            return run
    return compile_graph


def _aot_autograd() -> Callable | None:
    try:
        import ember_aot
    except ImportError:
        return None
    return getattr(ember_aot, "aot_autograd", None)


def _plan_codec(mode: str | None, options: dict | None) -> Any:
    """Compiled plans are kept on disk, except while debugging (the dumps come from compiling)
    and under CUDA graphs (their wrapper needs the aten graph at compile time)."""
    if debug.enabled() or mode in ("reduce-overhead", "max-autotune"):
        return None
    from .plan_codec import InductorCodec
    return InductorCodec(options)


def inductor(gm: torch.fx.GraphModule, example_inputs: list, mode: str | None = None,
             options: dict | None = None) -> Callable:
    """The ``inductor`` backend (see module docstring). ``mode="reduce-overhead"`` and
    ``"max-autotune"`` run each compiled graph through CUDA graphs (ember_cudagraphs)."""
    debug.note_fx_graph(gm)
    traced = decompose_flex_attention(gm)  # gm itself stays what runs eagerly
    compile_graph = make_graph_compiler(options)
    if mode in ("reduce-overhead", "max-autotune"):
        from ember_cudagraphs import wrap_compiler
        compile_graph = wrap_compiler(compile_graph)
    aot = _aot_autograd()
    if aot is not None:
        # foreach ops one op per tensor where kernels are C++ loops (a Triton kernel per parameter
        # is a launch per parameter): the same choice of language as the graph's kernels
        device = next((x.device.type for x in example_inputs if isinstance(x, torch.Tensor)), "cpu")
        per_tensor = device == "cpu" and kernel_language(device) == "cpp"
        backend = aot(fw_compiler=compile_graph, bw_compiler=compile_graph, inference_compiler=compile_graph,
                      decompositions=functools.partial(decompositions, foreach_per_tensor=per_tensor),
                      cache=_plan_codec(mode, options), joint_pass=layout.channels_last_training,
                      # input mutations written by the kernels (mutation.py); under CUDA graphs,
                      # which copy inputs into buffers of their own, written back by ember_aot
                      keep_inference_input_mutations=mode not in ("reduce-overhead", "max-autotune"),
                      dynamic=True)  # compile_aten_graph takes symbolic graphs (and compiles per
        # shape what it cannot compile symbolically)
        compiled = backend(traced, example_inputs)
    elif measured.needs_grad(example_inputs):
        log.warning("ember_inductor: training graphs need ember_aot.aot_autograd; running eagerly")
        return gm.forward
    else:
        compiled = compile_inference(traced, example_inputs, compile_graph)
    if not measured.enabled(options, example_inputs):
        return compiled
    return measured.FasterOf(compiled, gm.forward, f"graph {debug.graph_hash(gm)}")


def compile_inference(gm: Callable, example_inputs: Sequence[Any],
                      compile_graph: Callable | None = None) -> Callable:
    aten_gm, spec = trace_inference(gm, example_inputs)
    compiled = (compile_graph or make_graph_compiler())(aten_gm, list(example_inputs))

    def run(*args: Any) -> Any:
        return pytree.tree_unflatten(list(compiled(*args)), spec)
    run.compiled = compiled  # type: ignore[attr-defined]
    return run
