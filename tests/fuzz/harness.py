"""Runs a fuzz ``Program`` eagerly and through one ember backend, and says how they differ.

Both runs get fresh inputs with the same values (same strides too). What is compared: the
outputs (dtype, shape, values), the inputs afterwards (in-place mutation), and for programs with
inputs that require grad, the gradients of a weighted sum of the float outputs, including which
gradients are None. Floats compare with ``torch.testing.assert_close`` and ``equal_nan=True``
(NaN matches NaN, an infinity only the same infinity), with tolerances for float32 chains scaled
by the largest finite expected value. The compiled function is called three times (``CALLS``):
on the first inputs, on new values (Python scalars too), and with the largest size grown by
one; a call whose inputs eager rejects is left out.
"""
from __future__ import annotations

import dataclasses
import logging
import warnings
from typing import Any

import torch
from torch.utils import _pytree as pytree

import ember
from ember import compiled as compiled_mod
from ember.errors import BackendCompilerFailed
from tests.fuzz.program import Program

#: (rtol, atol at scale 1) per dtype
TOLERANCES = {torch.float32: (2e-3, 2e-4), torch.float64: (1e-6, 1e-7)}

#: backends that take options, and the ones they get: compile errors raise instead of hiding
BACKEND_OPTIONS = {"inductor": {"strict": True, "eager_fallback": False}}

INFERENCE_ONLY = ("onnxrt", "tvm")


@dataclasses.dataclass
class Run:
    outputs: list[Any]
    inputs_after: list[Any]
    grads: list[torch.Tensor | None]


@dataclasses.dataclass
class Outcome:
    """``status``: ok, mismatch, crash (the compiled call raised), backend_error (the backend
    failed to compile a graph), invalid (eager raises: not a test) or skipped."""

    status: str
    detail: str = ""
    graphs: int = 0
    breaks: int = 0
    fallbacks: int = 0
    backend_eager: int = 0  # graphs the backend ran eagerly (ember_aot's warnings)

    @property
    def full_capture(self) -> bool:
        """One graph, no break, and the backend compiled it (a match that ran eagerly is not one)."""
        return self.graphs == 1 and self.breaks == 0 and self.fallbacks == 0 and self.backend_eager == 0

    @property
    def category(self) -> str:
        """A short key that groups outcomes with the same cause (used to count and to shrink)."""
        return f"{self.status}: {self.detail.splitlines()[0][:120]}" if self.detail else self.status


def _loss_weights(shape: torch.Size, k: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(777 + k)).to(dtype)


def execute(fn: Any, program: Program, variant: int = 0) -> Run:
    """Call ``fn`` on fresh inputs (``Program.make_inputs(variant)``); backward through the float
    outputs that require grad."""
    args = program.make_inputs(variant)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*args)
        leaves = pytree.tree_leaves(out)
        if program.requires_grad:
            terms = [(o * _loss_weights(o.shape, k, o.dtype)).sum().double()
                     for k, o in enumerate(leaves)
                     if isinstance(o, torch.Tensor) and o.requires_grad and o.dtype.is_floating_point]
            if terms:
                torch.stack(terms).sum().backward()
    detach = lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v  # noqa: E731
    return Run(outputs=[detach(o) for o in leaves],
               inputs_after=[detach(a) for a in args],
               grads=[a.grad if isinstance(a, torch.Tensor) and a.requires_grad else None for a in args])


def differ(what: str, expected: Any, actual: Any) -> str | None:
    """How ``actual`` differs from ``expected`` (a tensor at the dtype's tolerance, else ``==``), None if not."""
    if isinstance(expected, torch.Tensor) != isinstance(actual, torch.Tensor):
        return f"{what}: {type(actual).__name__} instead of {type(expected).__name__}"
    if not isinstance(expected, torch.Tensor):
        return None if expected == actual else f"{what}: {actual!r} instead of {expected!r}"
    if expected.dtype != actual.dtype:
        return f"{what}: dtype {actual.dtype} instead of {expected.dtype}"
    if expected.shape != actual.shape:
        return f"{what}: shape {tuple(actual.shape)} instead of {tuple(expected.shape)}"
    if expected.dtype in TOLERANCES:
        rtol, atol = TOLERANCES[expected.dtype]
        finite = expected[torch.isfinite(expected)]
        scale = max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
        try:
            torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol * scale, equal_nan=True)
        except AssertionError as exc:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            return f"{what}: values differ ({'; '.join(lines[1:4])})"
        return None
    if not torch.equal(actual, expected):
        return f"{what}: values differ ({actual.flatten()[:6].tolist()} instead of {expected.flatten()[:6].tolist()})"
    return None


def compare(expected: Run, actual: Run) -> str | None:
    """The first difference between two runs, None if they agree."""
    if len(expected.outputs) != len(actual.outputs):
        return f"outputs: {len(actual.outputs)} values instead of {len(expected.outputs)}"
    for k, (e, a) in enumerate(zip(expected.outputs, actual.outputs)):
        if (d := differ(f"output {k}", e, a)):
            return d
    for k, (e, a) in enumerate(zip(expected.inputs_after, actual.inputs_after)):
        if (d := differ(f"input {k} after the call", e, a)):
            return d
    for k, (e, a) in enumerate(zip(expected.grads, actual.grads)):
        if (e is None) != (a is None):
            return f"grad of input {k}: {'None' if a is None else 'a tensor'} instead of {'None' if e is None else 'a tensor'}"
        if e is not None and (d := differ(f"grad of input {k}", e, a)):
            return d
    return None


#: the calls each program gets: the first, a cached-entry call on new values, one on new sizes
CALLS = ((0, "first call"), (1, "call on new values"), (2, "call on new sizes"))


def expect(program: Program) -> list[Run | None]:
    """Eager's runs of ``program`` for each of ``CALLS`` (None where eager raises)."""
    runs: list[Run | None] = []
    for variant, _ in CALLS:
        try:
            runs.append(execute(program.function(), program, variant))
        except Exception:
            runs.append(None)
    return runs


def check(program: Program, backend: Any, expected: list[Run | None] | None = None) -> Outcome:
    """Run ``program`` eagerly (unless ``expected``, from ``expect``, is given) and through
    ``backend`` (a name or a compiler callable), one compiled function for all ``CALLS``."""
    if backend in INFERENCE_ONLY and program.requires_grad:
        return Outcome("skipped", "needs grad")
    expected = expect(program) if expected is None else expected
    if expected[0] is None:
        return Outcome("invalid", "eager raises")
    options = BACKEND_OPTIONS.get(backend) if isinstance(backend, str) else None
    compiled = ember.compile(program.function(), backend=backend, options=options)
    label = CALLS[0][1]
    with Observer() as observer:
        try:
            for (variant, label), want in zip(CALLS, expected):
                if want is None:
                    continue
                got = execute(compiled, program, variant)
                observer.pause()  # capture counts are the first call's
                if (d := compare(want, got)):
                    return Outcome("mismatch", f"{label}: {d}", **observer.counts())
        except BackendCompilerFailed as exc:
            return Outcome("backend_error", f"{label}: {str(exc).splitlines()[0]}", **observer.counts())
        except Exception as exc:
            return Outcome("crash", f"{label}: {type(exc).__name__}: {str(exc).strip()}", **observer.counts())
        return Outcome("ok", "", **observer.counts())


class Observer:
    """While entered: compile errors raise (``suppress_errors`` off) and ember's capture events
    (graphs, breaks, eager fallbacks) and its backends' "ran eagerly" warnings are counted.
    ``pause`` stops counting capture events (the warnings are counted on every call)."""

    def __init__(self) -> None:
        self.events = {"graph": 0, "break": 0, "fallback": 0, "backend_eager": 0}
        self._eager_plans = _EagerPlans(self.events)

    def _observe(self, event: str, details: dict) -> None:
        if event in self.events:
            self.events[event] += 1

    def pause(self) -> None:
        if self._observe in compiled_mod.OBSERVERS:
            compiled_mod.OBSERVERS.remove(self._observe)

    def counts(self) -> dict[str, int]:
        e = self.events
        return {"graphs": e["graph"], "breaks": e["break"], "fallbacks": e["fallback"],
                "backend_eager": e["backend_eager"]}

    def __enter__(self) -> "Observer":
        self._suppress = ember.config.suppress_errors
        ember.config.suppress_errors = False
        compiled_mod.OBSERVERS.append(self._observe)
        logging.getLogger("ember").addHandler(self._eager_plans)
        return self

    def __exit__(self, *exc: Any) -> None:
        ember.config.suppress_errors = self._suppress
        logging.getLogger("ember").removeHandler(self._eager_plans)
        self.pause()


class _EagerPlans(logging.Handler):
    """Counts the warnings of ember's backends that a graph, or one call of it, runs eagerly."""

    def __init__(self, events: dict[str, int]) -> None:
        super().__init__(logging.WARNING)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        if "eagerly" in record.getMessage():
            self.events["backend_eager"] += 1
