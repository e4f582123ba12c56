"""Differential test harness for the capture corpus.

A :class:`Case` is a function (or an nn.Module factory) plus several argument tuples. For each
case the harness runs the function eagerly and through ``ember.compile(fn, backend=<counting>)``
on every argument tuple (each call gets its own clone of the arguments, so in-place work on
inputs is compared too), then runs all argument tuples a second time to check that the cache
is hit. It compares:

- outputs, structurally (container types, namedtuple classes, dict keys, torch.Size, Python
  scalars by value and type, tensors with ``torch.testing.assert_close`` incl. dtype/shape);
- identity: when eager returns (part of) an input object unchanged, the compiled call must
  return the corresponding input object of its own call;
- arguments after the call (in-place mutation of inputs must match eager);
- optional extra state (``state=lambda mod_or_fn, args: ...``), e.g. module buffers;
- warnings and graph breaks: whole-graph cases must emit no warning starting with ``ember:`` and
  no record on the ``ember.graph_breaks`` logger (a silent graph break is not a whole capture);
  breaking cases (``breaks="fragment"``) must emit a fallback warning or a graph-break record
  that contains ``fragment`` (so they keep passing once graph breaks with resume functions land);
- torch's global state after the call (grad mode, inference mode, autocast, default dtype and
  device, the CPU random generator): the compiled call must leave it as the eager call did,
  whether it returned or raised;
- the number of graphs the backend received (``graphs=``), after the first pass and unchanged
  after the second pass.

Cases become pytest params through :func:`params`, which attaches ``xfail`` (strict) and the
``breaks`` marker.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import warnings
from typing import Any, Callable

import pytest
import torch

import ember

SEED = 1234


class CountingBackend:
    """``(gm, example_inputs) -> gm.forward``, remembering each graph."""

    dynamic = True  # it runs the graph as it is: right for every size, so it counts captures

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs.append(gm)
        return gm.forward

    @property
    def count(self) -> int:
        return len(self.graphs)


@dataclasses.dataclass
class Case:
    name: str
    fn: Callable[..., Any] | None = None
    # each entry: a tuple of arguments, a dict {"args": (...), "kwargs": {...}}, or a callable
    # returning either (called once per use, before the eager and the compiled call)
    args: list[Any] = dataclasses.field(default_factory=list)
    graphs: int | None = None  # total graphs expected after all argument tuples (None: not checked)
    module: Callable[[], torch.nn.Module] | None = None  # factory; eager and compiled get deep copies
    breaks: str | None = None  # expected fragment of the fallback warning; marks the case `breaks`
    xfail: str | None = None  # reason of a known ember bug (strict xfail)
    state: Callable[[Any, tuple], Any] | None = None  # extra state to compare after each call
    atol: float | None = None
    rtol: float | None = None
    second_pass: bool = True  # run all argument tuples again and expect no new graph

    def param(self) -> Any:
        marks = []
        if self.breaks is not None:
            marks.append(pytest.mark.breaks)
        if self.xfail is not None:
            marks.append(pytest.mark.xfail(strict=True, reason=self.xfail))
        return pytest.param(self, id=self.name, marks=marks)


def params(cases: list[Case]) -> list[Any]:
    names = [c.name for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, f"duplicate case names: {dupes}"
    return [c.param() for c in cases]


# -- cloning and comparing -----------------------------------------------------------------
def clone(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """A copy of an argument tree: tensors cloned (keeping requires_grad), containers rebuilt.

    Aliasing is kept: the same tensor (or list) twice in the tree becomes the same copy twice.
    """
    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, torch.Tensor):
        if isinstance(value, torch.nn.Parameter):
            out = torch.nn.Parameter(value.detach().clone(), requires_grad=value.requires_grad)
        else:
            out = value.detach().clone()
            if value.requires_grad:
                out.requires_grad_(True)
    elif isinstance(value, list):
        out = memo[id(value)] = []
        out.extend(clone(v, memo) for v in value)
    elif isinstance(value, tuple):
        items = [clone(v, memo) for v in value]
        out = type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
    elif isinstance(value, dict):
        out = memo[id(value)] = copy.copy(value)  # keeps a defaultdict's factory
        out.clear()
        out.update((k, clone(v, memo)) for k, v in value.items())
    elif type(value) is set:
        out = set(value)
    else:
        return value
    memo[id(value)] = out
    return out


_ATOMIC = (int, float, bool, complex, str, bytes, type(None), torch.dtype, torch.device)


def assert_same(expected: Any, actual: Any, path: str = "out", atol: float | None = None,
                rtol: float | None = None) -> None:
    """Structural equality; tensors with assert_close (same dtype, shape, device)."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{path}: expected a tensor, got {type(actual).__name__}"
        assert type(actual) is type(expected), f"{path}: tensor class {type(actual)} != {type(expected)}"
        assert actual.shape == expected.shape, f"{path}: shape {actual.shape} != {expected.shape}"
        assert actual.requires_grad == expected.requires_grad, f"{path}: requires_grad differs"
        kw = {} if atol is None else {"atol": atol, "rtol": rtol if rtol is not None else 0}
        torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{path}: {m}", **kw)
        return
    assert type(actual) is type(expected), f"{path}: type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{path}[{i}]", atol, rtol)
        return
    if isinstance(expected, dict):
        assert list(actual.keys()) == list(expected.keys()), f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            assert_same(expected[k], actual[k], f"{path}[{k!r}]", atol, rtol)
        return
    if isinstance(expected, float) and expected != expected:
        assert actual != actual, f"{path}: expected nan, got {actual!r}"
        return
    assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def _object_paths(value: Any, path: str, out: dict[int, str]) -> None:
    """id -> path of every mutable/identity-bearing object inside an argument tree."""
    if isinstance(value, _ATOMIC):
        return
    out.setdefault(id(value), path)
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _object_paths(v, f"{path}[{i}]", out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _object_paths(v, f"{path}[{k!r}]", out)


def assert_identity(expected: Any, actual: Any, eager_in: dict[int, str], compiled_in: dict[int, str],
                    path: str = "out") -> None:
    """Where eager returned an input object itself, compiled must return its own input object."""
    if isinstance(expected, _ATOMIC):
        return
    where = eager_in.get(id(expected))
    if where is not None:
        got = compiled_in.get(id(actual))
        assert got == where, f"{path}: eager returned input {where} itself, compiled returned {got or 'a new object'}"
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_identity(e, a, eager_in, compiled_in, f"{path}[{i}]")
    elif isinstance(expected, dict) and isinstance(actual, dict):
        for k in expected:
            if k in actual:
                assert_identity(expected[k], actual[k], eager_in, compiled_in, f"{path}[{k!r}]")


# -- running ---------------------------------------------------------------------------------
def _split(entry: Any) -> tuple[tuple, dict]:
    if callable(entry):  # made at call time (aliasing, or a change of global state before the call)
        entry = entry()
    if isinstance(entry, dict) and set(entry) <= {"args", "kwargs"}:
        return tuple(entry.get("args", ())), dict(entry.get("kwargs", {}))
    assert isinstance(entry, tuple), f"argument entries are tuples or {{'args', 'kwargs'}} dicts, got {entry!r}"
    return entry, {}


def _ember_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if str(w.message).startswith("ember:")]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def break_records():
    """Collect what ember logs on ``ember.graph_breaks`` (fallbacks and graph breaks)."""
    logger = logging.getLogger("ember.graph_breaks")
    handler = _Records()
    saved = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)


def run_case(case: Case) -> CountingBackend:
    ember.reset()
    backend = CountingBackend()
    if case.module is not None:
        torch.manual_seed(SEED)
        base = case.module()
        eager_target = copy.deepcopy(base)
        compiled_obj = copy.deepcopy(base)
        compiled = ember.compile(compiled_obj, backend=backend)
    else:
        assert case.fn is not None
        eager_target = compiled_obj = case.fn
        compiled = ember.compile(case.fn, backend=backend)
    assert case.args, f"{case.name}: no argument tuples"

    fallback_messages: list[str] = []
    passes = 2 if case.second_pass else 1
    count_after_first = None
    for pass_no in range(passes):
        for n, entry in enumerate(case.args):
            args, kwargs = _split(entry)
            eager_args, eager_kwargs = clone((args, kwargs))
            comp_args, comp_kwargs = clone((args, kwargs))
            where = f"{case.name} pass {pass_no + 1} args #{n}"

            before = global_state()
            torch.manual_seed(SEED)
            expected_exc = None
            try:
                expected = eager_target(*eager_args, **eager_kwargs)
            except Exception as exc:  # the compiled call must raise the same
                expected_exc = exc
            eager_state = global_state()
            set_global_state(before)
            torch.manual_seed(SEED)
            with warnings.catch_warnings(record=True) as caught, break_records() as records:
                warnings.simplefilter("always")
                if expected_exc is not None:
                    with pytest.raises(type(expected_exc)):
                        compiled(*comp_args, **comp_kwargs)
                else:
                    actual = compiled(*comp_args, **comp_kwargs)
            compiled_state = global_state()
            set_global_state(before)
            assert_same_global_state(eager_state, compiled_state, where)
            messages = _ember_warnings(caught)
            fallback_messages.extend(messages + records)
            if case.breaks is None:
                assert not messages, f"{where}: unexpected fallback: {messages}"
                assert not records, f"{where}: unexpected graph break: {records}"
            if expected_exc is not None:
                continue

            assert_same(expected, actual, f"{where}: out", case.atol, case.rtol)
            eager_in: dict[int, str] = {}
            comp_in: dict[int, str] = {}
            _object_paths(list(eager_args) + [eager_kwargs], "args", eager_in)
            _object_paths(list(comp_args) + [comp_kwargs], "args", comp_in)
            if case.module is not None:
                eager_in.setdefault(id(eager_target), "module")
                comp_in.setdefault(id(compiled_obj), "module")
            assert_identity(expected, actual, eager_in, comp_in, f"{where}: out")
            # inputs after the call (in-place mutation must match eager)
            assert_same(eager_args, comp_args, f"{where}: args after call", case.atol, case.rtol)
            assert_same(eager_kwargs, comp_kwargs, f"{where}: kwargs after call", case.atol, case.rtol)
            if case.module is not None:
                assert_same(_module_state(eager_target), _module_state(compiled_obj),
                            f"{where}: module state", case.atol, case.rtol)
            if case.state is not None:
                assert_same(case.state(eager_target, eager_args), case.state(compiled_obj, comp_args),
                            f"{where}: state", case.atol, case.rtol)
        if pass_no == 0:
            count_after_first = backend.count

    if case.breaks is not None:
        assert any(case.breaks in m for m in fallback_messages), (
            f"{case.name}: expected a fallback warning or graph-break record naming {case.breaks!r}, "
            f"got {fallback_messages}")
    elif case.graphs is not None:
        assert count_after_first == case.graphs, (
            f"{case.name}: expected {case.graphs} graph(s) after the first pass, got {count_after_first}")
    if case.breaks is None and passes == 2:
        assert backend.count == count_after_first, (
            f"{case.name}: second pass over the same arguments compiled again "
            f"({count_after_first} -> {backend.count} graphs): guards miss the cache")
    return backend


_AUTOCAST_DEVICES = ("cpu", "cuda")


def global_state() -> dict[str, Any]:
    """Torch's global state that a call may change; eager and compiled calls must agree on it."""
    return {
        "grad mode": torch.is_grad_enabled(),
        "inference mode": torch.is_inference_mode_enabled(),
        "autocast": [(d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _AUTOCAST_DEVICES],
        "autocast cache": torch.is_autocast_cache_enabled(),
        "default dtype": torch.get_default_dtype(),
        "default device": torch.get_default_device(),
        "rng state": torch.random.get_rng_state(),
    }


def set_global_state(state: dict[str, Any]) -> None:
    """Put back what a call changed (inference mode is a scoped guard: it cannot be set)."""
    torch.set_grad_enabled(state["grad mode"])
    for device, enabled, dtype in state["autocast"]:
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(state["autocast cache"])
    torch.set_default_dtype(state["default dtype"])
    if torch.get_default_device() != state["default device"]:
        # set_default_device("cpu") would leave a device mode on the torch-function stack of the
        # whole process (every later torch call through Python); None is the CPU without one
        device = state["default device"]
        torch.set_default_device(None if device == torch.device("cpu") else device)
    torch.random.set_rng_state(state["rng state"])


def assert_same_global_state(eager: dict[str, Any], compiled: dict[str, Any], where: str) -> None:
    for key in eager:
        same = torch.equal(eager[key], compiled[key]) if key == "rng state" else eager[key] == compiled[key]
        assert same, f"{where}: {key} after the compiled call is {compiled[key]!r}, after eager {eager[key]!r}"


def _module_state(mod: torch.nn.Module) -> dict[str, Any]:
    state = {k: v for k, v in mod.state_dict(keep_vars=False).items()}
    state["__training__"] = mod.training
    return state


def t(*shape: int, dtype: torch.dtype = torch.float32, seed: int | None = None) -> torch.Tensor:
    """A small deterministic tensor (ints for integer dtypes, bools for torch.bool)."""
    g = torch.Generator().manual_seed(seed if seed is not None else (sum(shape) * 31 + len(shape)))
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point and not dtype.is_complex:
        return torch.randint(-5, 6, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)
