"""Run one OpInfo sample through ``ember.compile`` and through eager, and compare.

The compiled function is called as a user would call it: the sample's input, args and kwargs
passed straight to ``ember.compile(fn, backend=...)``. A counting wrapper around the backend
proves the op reached the backend (at least one graph, no eager-fallback warning). Forward:
outputs compared at ``torch.testing.assert_close``'s tolerances for their dtype. Backward: the
(processed) outputs are summed against a seeded random cotangent and the gradients of every
input that requires grad are compared, including which of them are None.

float16/bfloat16: compiled code may compute in float32 where eager rounds every step (as
torch's inductor does), so a low-precision result passes when it is close, at loosened
tolerances, to eager at that precision or to eager computed in float32 and rounded. A float32
result that is not close to eager's passes when it is close to eager computed in float64 and
rounded: eager's own rounding is then what differs (layer norm over one element: the weight's
gradient is exactly 0, eager's -3e-5, its x - mean times a reciprocal of sqrt(eps)).
"""
from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Collection, Sequence

import torch
from torch.utils import _pytree as pytree

import ember
from ember.backends import REGISTRY

LOW_PRECISION = {torch.float16: {"rtol": 5e-3, "atol": 5e-3}, torch.bfloat16: {"rtol": 2e-2, "atol": 2e-2}}


class CountingBackend:
    """A backend that counts the graphs it compiles and hands them to the named backend."""

    def __init__(self, backend: str) -> None:
        self.name = backend
        _, self.compiler, spec = REGISTRY.lookup(backend)
        # Compare the compiled code itself, not inductor's "keep the faster of compiled and eager".
        self.options = {"eager_fallback": False} if spec is not None and spec.accepts_options else None
        self.count = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.count += 1
        if self.options is not None:
            return self.compiler(gm, example_inputs, options=self.options)
        return self.compiler(gm, example_inputs)


def _call(fn: Callable, sample: Any) -> Any:
    return fn(sample.input, *sample.args, **sample.kwargs)


def _make_fn(op: Any) -> Callable:
    opfn = op.op

    def fn(*args: Any, **kwargs: Any) -> Any:
        return opfn(*args, **kwargs)
    return fn


def _leaves(sample: Any) -> list:
    return pytree.tree_leaves((sample.input, sample.args, sample.kwargs))


def _diff_inputs(sample: Any) -> list[torch.Tensor]:
    return [t for t in _leaves(sample) if isinstance(t, torch.Tensor) and t.requires_grad]


def _grads(out: Any, sample: Any, seed: int) -> list:
    """Gradients of sum(out * cotangent) w.r.t. every input that requires grad (None if unused)."""
    inputs = _diff_inputs(sample)
    outs = [o for o in pytree.tree_leaves(sample.output_process_fn_grad(out))
            if isinstance(o, torch.Tensor) and o.requires_grad]
    if not outs or not inputs:
        return [None] * len(inputs)
    gen = torch.Generator().manual_seed(seed)
    cots = [torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o.dtype).to(o.device) for o in outs]
    return list(torch.autograd.grad(outs, inputs, grad_outputs=cots, allow_unused=True))


#: the dtype a result of each dtype is checked against when it is not close to eager's
WIDER = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float64}


def _upcast(sample: Any, dtype: torch.dtype) -> Any:
    """The sample with its ``dtype`` tensors as leaves of the wider dtype (same requires_grad)."""
    def up(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.dtype == dtype:
            return t.detach().to(WIDER[dtype]).requires_grad_(t.requires_grad)
        return t
    # copy.copy, not __dict__: SampleInput declares __slots__ (torch 2.11 to 2.13 at least)
    upcast = copy.copy(sample)
    upcast.input, upcast.args, upcast.kwargs = pytree.tree_map(up, (sample.input, sample.args, sample.kwargs))
    return upcast


def _close(actual: Any, expected: Any, what: str, low: dict | None = None, tolerance: dict | None = None,
           unset: Collection[int] = ()) -> None:
    """Leaves compared one by one; those at the indices ``unset`` (memory the op leaves
    uninitialised) by shape and dtype only."""
    a_leaves, a_spec = pytree.tree_flatten(actual, is_leaf=lambda x: x is None)
    e_leaves, e_spec = pytree.tree_flatten(expected, is_leaf=lambda x: x is None)
    assert a_spec == e_spec, f"{what}: structure {a_spec} != {e_spec}"
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        where = f"{what}[{i}]"
        if e is None or a is None:
            assert a is None and e is None, f"{where}: compiled {type(a).__name__}, eager {type(e).__name__}"
            continue
        if i in unset:
            assert _shapes(a) == _shapes(e), f"{where}: {_shapes(a)} != {_shapes(e)}"
            continue
        if not isinstance(e, torch.Tensor):
            assert a == e or (a != a and e != e), f"{where}: {a!r} != {e!r}"
            continue
        tol = (low or {}).get(e.dtype, tolerance or {}) if isinstance(a, torch.Tensor) else {}
        torch.testing.assert_close(a, e, equal_nan=True, msg=lambda m: f"{where}: {m}", **tol)


def _close_or_wider(actual: Any, expected: Any, reference: Callable[[], Any], what: str, dtype: torch.dtype,
                    tolerance: dict | None = None, unset: Collection[int] = ()) -> None:
    """Close to eager, or else to eager computed in the wider dtype (``WIDER``) and rounded."""
    low = LOW_PRECISION if dtype in LOW_PRECISION else None
    try:
        _close(actual, expected, what, low, tolerance, unset=unset)
        return
    except AssertionError:
        if dtype not in WIDER:
            raise
    is_leaf = lambda x: x is None  # noqa: E731
    e_leaves, e_spec = pytree.tree_flatten(expected, is_leaf=is_leaf)
    r_leaves, r_spec = pytree.tree_flatten(reference(), is_leaf=is_leaf)
    assert r_spec == e_spec, f"{what}: {WIDER[dtype]} reference has another structure"
    rounded = [r.to(e.dtype) if isinstance(r, torch.Tensor) and isinstance(e, torch.Tensor) else r
               for r, e in zip(r_leaves, e_leaves)]
    _close(actual, pytree.tree_unflatten(rounded, e_spec), f"{what} (vs {WIDER[dtype]} reference)", low, tolerance,
           unset=unset)


def _break_reasons(fn: Callable, sample: Any) -> str:
    """Why capture made no graph, as ``ember.explain`` reports it (first reason, innermost frame)."""
    ember.reset()
    reasons = ember.explain(fn)(sample.input, *sample.args, **sample.kwargs).break_reasons
    if not reasons:
        return "capture made an empty graph"
    where = reasons[0].location.split("site-packages/")[-1]
    return f"{reasons[0].reason} at {where}"


def _returns_its_inputs(result: Any, sample: Any) -> bool:
    """The op gave back its own input tensors (``positive`` of a float, ``long`` of an int64,
    ``atleast_1d`` of a vector): no work, so no graph, the same as a function returning its argument."""
    inputs = {id(t) for t in pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
              if isinstance(t, torch.Tensor)}
    leaves = pytree.tree_leaves(result)
    return bool(leaves) and all(isinstance(t, torch.Tensor) and id(t) in inputs for t in leaves)


def _shapes(x: Any) -> Any:
    return pytree.tree_map(lambda t: (t.shape, t.dtype) if isinstance(t, torch.Tensor) else t, x)


def check_sample(op: Any, sample: Any, backend: str, phase: str, dtype: torch.dtype, *,
                 shapes_only: bool = False, needs_graph: bool = True, tolerance: dict | None = None,
                 unset_outputs: Collection[int] = (), seed: int = 0) -> None:
    """Compile ``op`` for ``sample`` on ``backend`` and compare with eager (``phase`` "fwd"/"bwd").

    ``needs_graph=False`` accepts an op that capture leaves out of every graph (by design);
    ``tolerance`` replaces assert_close's defaults for float32/float64 results;
    ``unset_outputs`` are the indices of the output leaves compared by shape and dtype only."""
    ember.reset()
    fn = _make_fn(op)
    counter = CountingBackend(backend)
    compiled = ember.compile(fn, backend=counter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.manual_seed(seed)
        actual = _call(compiled, sample)
    fallbacks = [str(w.message) for w in caught if str(w.message).startswith("ember:")]
    assert not fallbacks, f"ran eagerly: {fallbacks[0]}"
    assert counter.count >= 1 or not needs_graph or _returns_its_inputs(actual, sample), \
        f"no graph reached the backend: {_break_reasons(fn, sample)}"
    torch.manual_seed(seed)
    expected = _call(fn, sample)
    if shapes_only:
        assert _shapes(actual) == _shapes(expected), (_shapes(actual), _shapes(expected))
        return
    _close_or_wider(actual, expected, lambda: _call(fn, _upcast(sample, dtype)), "output", dtype, tolerance,
                    unset_outputs)
    if phase != "bwd":
        return
    got, want = _grads(actual, sample, seed), _grads(expected, sample, seed)

    def reference() -> list:
        up = _upcast(sample, dtype)
        return _grads(_call(fn, up), up, seed)
    _close_or_wider(got, want, reference, "grad", dtype, tolerance)


def samples(op: Any, device: str, dtype: torch.dtype, phase: str, limit: int | None) -> Sequence[Any]:
    """The first ``limit`` samples of ``op`` (all when None), with grad-requiring inputs for bwd."""
    out = []
    for sample in op.sample_inputs(device, dtype, requires_grad=phase == "bwd"):
        out.append(sample)
        if limit is not None and len(out) >= limit:
            break
    return out
