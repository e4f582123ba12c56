"""Harness of the behaviours ported from PyTorch's Dynamo tests (``test/dynamo/`` of the pytorch repository).

A :class:`Behaviour` is a tiny program (a function, or an nn.Module factory) plus argument sets: one
fact that a torch test checks, written here in our own words. :func:`check` runs it

- eagerly, then through ``ember.compile`` with a counting backend (``fullgraph`` as the torch test
  used it: ``make_test``, ``nopython`` and ``fullgraph=True`` tests are fullgraph here), one compiled
  function called on every argument set in order, as torch's tests call theirs;
- and compares: results (structurally, tensors with ``assert_close``), exceptions (same type as
  eager's), the arguments after the call (in-place work), optional extra ``state`` (globals,
  objects), and torch's global state (grad mode, autocast, default dtype, RNG);
- graph counts: where the torch test counts frames or graphs (``count=True``), and for every case
  that is not fullgraph (the count is then what proves capture), the same program goes through
  ``torch.compile`` with a counting backend in the same test and ember must compile as many graphs.
  ``frames`` is the torch test's own figure: torch.compile must give it too, or the port is wrong.

Failures raise :class:`Failure` with a short, stable reason (what the expected-failure table keeps);
a port that torch.compile itself does not pass raises :class:`PortError` (a bug of this folder, never
a table entry). ``check(b, compiler="torch")`` runs a case through torch.compile instead of ember:
``python -m tests.dynamo_behaviours.refresh --torch`` uses it to prove each port against torch.
"""
from __future__ import annotations

import collections.abc
import contextlib
import copy
import dataclasses
import importlib
import inspect
import re
import warnings
import zlib
from typing import Any, Callable, Iterator

import numpy as np
import torch

import ember
from harness import assert_same, assert_same_global_state, break_records, clone, global_state, set_global_state

SEED = 1234


# cases whose graph count depends on which cases ran before them in the process (one worker's
# order under pytest-xdist against the refresh's): their table entry is a non-strict xfail
ORDER_DEPENDENT = frozenset({"test_ctx_manager::autocast_method_with_break"})


class Failure(AssertionError):
    """ember does not show the behaviour; ``reason`` is short and stable (the table's text)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason + (f"\n{detail}" if detail else ""))
        self.reason = reason


class PortError(AssertionError):
    """torch.compile itself does not show the behaviour as ported: the case is wrong, not ember."""


class Counter:
    """A ``(gm, example_inputs) -> gm.forward`` backend counting the graphs it is given."""

    dynamic = True  # runs the graph as it is, so it counts captures, not size specialisations

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.count += 1
        return gm.forward


@dataclasses.dataclass
class Behaviour:
    suite: str  # the torch test file, without ".py"
    torch_test: str  # the torch test whose fact this checks
    name: str  # unique in its suite
    fn: Callable[..., Any] | None
    args: list[Any]  # argument tuples, {"args", "kwargs"} dicts, or callables returning either
    fullgraph: bool = True
    count: bool = False  # compare graph counts with torch.compile's
    frames: int | None = None  # the torch test's expected graph count (checked on torch.compile)
    module: Callable[[], torch.nn.Module] | None = None  # factory; each run gets its own copy
    setup: Callable[[], Any] | None = None  # resets outside state before each run
    state: Callable[[], Any] | None = None  # outside state compared after each run
    dynamic: bool | None = None
    atol: float | None = None
    rtol: float | None = None
    config: dict[str, Any] | None = None  # the torch test's torch._dynamo.config patch, set on ember.config too
    around: Any = None  # a context-manager factory each call runs in (ambient grad mode...), or one per call
    post: Callable[..., Any] | None = None  # (result, *args) -> what to compare (attributes set on outputs)
    torch_differs: str | None = None  # where this torch.compile departs from eager (the port checks eager's)

    @property
    def key(self) -> str:
        return f"{self.suite}::{self.name}"

    @property
    def counts_graphs(self) -> bool:
        return self.count or not self.fullgraph


# -- registering ---------------------------------------------------------------------------------
def randn_args(seed_text: str, nargs: int, shape: tuple[int, ...] = (10, 10)) -> Callable[[], tuple]:
    """``nargs`` random tensors, the same on every call (seeded by ``seed_text``)."""
    seed = zlib.crc32(seed_text.encode())

    def make() -> tuple:
        g = torch.Generator().manual_seed(seed)
        return tuple(torch.randn(shape, generator=g) for _ in range(nargs))
    return make


class Suite:
    """The behaviours ported from one torch test file."""

    def __init__(self, torch_file: str) -> None:
        self.name = torch_file
        self.cases: list[Behaviour] = []

    def add(self, torch_test: str, name: str, fn: Callable[..., Any] | None, args: list[Any], **kw: Any) -> Behaviour:
        assert all(c.name != name for c in self.cases), f"{self.name}: duplicate case {name}"
        assert args, f"{self.name}::{name}: no argument sets"
        b = Behaviour(self.name, torch_test, name, fn, list(args), **kw)
        self.cases.append(b)
        return b

    def case(self, torch_test: str, *args: Any, name: str | None = None, **kw: Any) -> Callable:
        """Decorator: ``fn`` called on each argument set in ``args``."""
        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add(torch_test, name or fn.__name__, fn, list(args), **kw)
            return fn
        return deco

    def std(self, torch_test: str, frames: int | None = 1, name: str | None = None, **kw: Any) -> Callable:
        """Decorator for torch's ``make_test``: fullgraph, two sets of random 10x10 tensors (one per
        parameter), the graph count compared with torch.compile's (``frames`` is the torch test's)."""
        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            n = len(inspect.signature(fn).parameters)
            case = name or fn.__name__
            sets = [randn_args(f"{self.name}.{case}.{i}", n) for i in range(2)]
            self.add(torch_test, case, fn, sets, count=True, frames=frames, **kw)
            return fn
        return deco

    def torch_differs(self, reason: str, *names: str) -> None:
        """Mark cases whose fact eager Python shows but this torch.compile does not (``--torch`` skips them)."""
        found = {b.name for b in self.cases if b.name in names}
        assert found == set(names), f"{self.name}: no cases {set(names) - found}"
        for b in self.cases:
            if b.name in names:
                b.torch_differs = reason

    def pytest_function(self) -> Callable[[Behaviour], None]:
        """The suite's parametrized test: one case each, strict xfail where the table says so."""
        import pytest
        from behaviour_expected import EXPECTED

        params = []
        for b in self.cases:
            reason = EXPECTED.get(b.key)
            strict = b.key not in ORDER_DEPENDENT
            marks = [pytest.mark.xfail(strict=strict, reason=reason)] if reason is not None else []
            params.append(pytest.param(b, id=b.name, marks=marks))

        @pytest.mark.parametrize("b", params)
        def test_behaviour(b: Behaviour) -> None:
            check(b)
        return test_behaviour


# -- running -------------------------------------------------------------------------------------
@dataclasses.dataclass
class Run:
    results: list[tuple[str, Any]]  # ("ok", value) or ("raised", exception)
    args_after: list[Any]
    states: list[Any]
    globals_after: list[dict[str, Any]]
    graphs: int = 0
    messages: list[str] = dataclasses.field(default_factory=list)  # ember's fallback/break messages


def _split(entry: Any) -> tuple[tuple, dict]:
    if callable(entry):
        entry = entry()
    if isinstance(entry, dict) and set(entry) <= {"args", "kwargs"}:
        return tuple(entry.get("args", ())), dict(entry.get("kwargs", {}))
    assert isinstance(entry, tuple), f"argument sets are tuples, {{'args', 'kwargs'}} dicts or callables: {entry!r}"
    return entry, {}


def _run(b: Behaviour, target: Callable[..., Any]) -> Run:
    run = Run([], [], [], [])
    for i, entry in enumerate(b.args):
        # a callable entry makes fresh objects for each run (kept as made: tensor attributes stay)
        args, kwargs = _split(entry) if callable(entry) else clone(_split(entry))
        if b.setup is not None:
            b.setup()
        before = global_state()
        torch.manual_seed(SEED)
        try:
            around = b.around[i] if isinstance(b.around, list) else b.around
            with around() if around is not None else contextlib.nullcontext():
                out = target(*args, **kwargs)
            run.results.append(("ok", out if b.post is None else b.post(out, *args, **kwargs)))
        except Exception as exc:  # compared with eager's
            run.results.append(("raised", exc))
        run.globals_after.append(global_state())
        _restore(before)
        run.args_after.append((args, kwargs))
        run.states.append(b.state() if b.state is not None else None)
    return run


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_PLACE = re.compile(r"\(?/[^\s:()]+\.py:\d+\)?")


def normalise(text: str, limit: int = 160) -> str:
    """One line, no addresses or file places: a reason stays the same from run to run."""
    line = " ".join(text.split())
    line = _PLACE.sub("<file>", _ADDRESS.sub("0x..", line))
    return line if len(line) <= limit else line[: limit - 3] + "..."


def message_reason(message: str) -> str:
    """The cause in one of ember's fallback warnings or graph-break records, without the function's
    name, place and source line: "runs eagerly: <cause>" or "break: <cause>"."""
    line = normalise(message, 10_000).split(' File "')[0]
    line = re.sub(r"^ember: \S+ (<file> )?runs eagerly: ", "runs eagerly: ", line)
    line = re.sub(r"^graph break in \S+ (<file>)?:? ?", "break: ", line)
    return line if len(line) <= 140 else line[:137] + "..."


def ember_reason(exc: BaseException) -> str:
    """The reason line of ember's error (its second line for Unsupported), else type and message."""
    if isinstance(exc, ember.Unsupported):
        lines = [s for s in str(exc).splitlines() if s.strip()]
        return "fullgraph: " + normalise(lines[1] if len(lines) > 1 else lines[0])
    return normalise(f"{type(exc).__name__}: {exc}")


def _ember_messages(caught: list[warnings.WarningMessage], records: list[str]) -> list[str]:
    return [str(w.message) for w in caught if str(w.message).startswith("ember:")] + records


def _restore(before: dict[str, Any]) -> None:
    """Put back what a run changed of torch's global state, and only that: setting the default
    device, even to the one in use, installs a device mode that changes how torch.compile traces."""
    now = global_state()
    if not torch.equal(now["rng state"], before["rng state"]):
        torch.random.set_rng_state(before["rng state"])
    if now["default device"] != before["default device"]:
        torch.set_default_device(None if before["default device"] == torch.device("cpu") else before["default device"])
    rest = {k: v for k, v in before.items() if k not in ("rng state", "default device")}
    if any(now[k] != v for k, v in rest.items()):
        device = torch.get_default_device()
        set_global_state({**before, "rng state": torch.random.get_rng_state(),
                          "default device": None if device == torch.device("cpu") else device})


@contextlib.contextmanager
def _ember_config(patch: dict[str, Any] | None) -> Iterator[None]:
    """The torch test's config names set on ember.config for the run (a name ember lacks does nothing
    until ember grows the option: the case fails until then)."""
    missing = object()
    saved = {k: getattr(ember.config, k, missing) for k in (patch or {})}
    for k, v in (patch or {}).items():
        setattr(ember.config, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is missing:
                delattr(ember.config, k)
            else:
                setattr(ember.config, k, v)


def _compiled(b: Behaviour, compiler: str) -> Run:
    counter = Counter()
    if b.module is not None:
        torch.manual_seed(SEED)
        target = b.module()
    else:
        target = b.fn
    if compiler == "ember":
        ember.reset()
        compiled = ember.compile(target, backend=counter, fullgraph=b.fullgraph, dynamic=b.dynamic)
        with warnings.catch_warnings(record=True) as caught, break_records() as records, _ember_config(b.config):
            warnings.simplefilter("always")
            run = _run(b, compiled)
        run.messages = _ember_messages(caught, records)
    else:
        dynamo = importlib.import_module("torch._dynamo")
        dynamo.reset()
        with dynamo.config.patch(**(b.config or {})):
            compiled = torch.compile(target, backend=counter, fullgraph=b.fullgraph, dynamic=b.dynamic)
            run = _run(b, compiled)
        dynamo.reset()
    run.graphs = counter.count
    if b.module is not None:
        run.states = [(s, _module_state(target)) for s in run.states]  # the last state, per run
    return run


def _module_state(mod: torch.nn.Module) -> dict[str, Any]:
    state = dict(mod.state_dict())
    state["__training__"] = mod.training
    return state


@dataclasses.dataclass
class Outcome:
    ember_graphs: int | None = None
    torch_graphs: int | None = None


def check(b: Behaviour, compiler: str = "ember", outcome: Outcome | None = None) -> Outcome:
    """Run ``b`` eagerly and through ``compiler`` ("ember" or "torch"); raise :class:`Failure` when
    they differ (or :class:`PortError` when torch.compile's count is not the torch test's)."""
    outcome = outcome or Outcome()
    if torch.get_default_device() == torch.device("cpu"):
        torch.set_default_device(None)  # drop a device mode another test's set_default_device("cpu") left
    eager_target = b.fn
    if b.module is not None:
        torch.manual_seed(SEED)
        eager_target = b.module()
    eager = _run(b, eager_target)
    if b.module is not None:
        eager.states = [(s, _module_state(eager_target)) for s in eager.states]
    compiled = _compiled(b, compiler)
    if compiler == "ember":
        outcome.ember_graphs = compiled.graphs
    else:
        outcome.torch_graphs = compiled.graphs
    wrong = PortError if compiler == "torch" else Failure
    _compare(b, eager, compiled, wrong)
    if compiler == "torch":
        if b.frames is not None and compiled.graphs != b.frames:
            raise PortError(f"torch.compile compiled {compiled.graphs} graph(s), the torch test expects {b.frames}")
        return outcome
    if b.counts_graphs:
        reference = _compiled(b, "torch")
        outcome.torch_graphs = reference.graphs
        if b.frames is not None and reference.graphs != b.frames:
            raise PortError(f"torch.compile compiled {reference.graphs} graph(s), the torch test expects {b.frames}")
        if compiled.graphs != reference.graphs:
            why = f" ({message_reason(compiled.messages[0])})" if compiled.messages else ""
            raise Failure(f"graphs: ember {compiled.graphs}, torch.compile {reference.graphs}{why}")
    return outcome


def _compare(b: Behaviour, eager: Run, compiled: Run, wrong: type[AssertionError]) -> None:
    for i, ((kind_e, val_e), (kind_c, val_c)) in enumerate(zip(eager.results, compiled.results)):
        where = f"call {i}"
        if kind_c == "raised" and kind_e == "ok":
            if wrong is Failure:
                raise Failure(ember_reason(val_c)) from val_c
            raise wrong(f"{where}: torch.compile raised {type(val_c).__name__}: {val_c}") from val_c
        if kind_e == "raised":
            if kind_c != "raised":
                raise wrong(f"no exception: eager raised {type(val_e).__name__}")
            if not isinstance(val_c, type(val_e)):
                if wrong is Failure and isinstance(val_c, ember.Unsupported):
                    raise Failure(ember_reason(val_c)) from val_c
                raise wrong(normalise(f"raised {type(val_c).__name__} where eager raised {type(val_e).__name__}"
                                      f": {val_c}")) from val_c
            continue
        try:
            assert_same(plain(val_e), plain(val_c), "out", b.atol, b.rtol)
            assert_same(plain(eager.args_after[i]), plain(compiled.args_after[i]), "arguments after the call",
                        b.atol, b.rtol)
            assert_same(plain(eager.states[i]), plain(compiled.states[i]), "state after the call", b.atol, b.rtol)
            assert_same_global_state(eager.globals_after[i], compiled.globals_after[i], "torch state")
        except AssertionError as exc:
            raise wrong(normalise("wrong: " + str(exc).splitlines()[0], 200)) from exc


_LEAVES = (int, float, bool, complex, str, bytes, type(None), torch.Tensor, torch.dtype, torch.device, torch.Size,
           type, range, slice)


def plain(value: Any, seen: frozenset[int] = frozenset()) -> Any:
    """What to compare of a value: containers kept, numpy arrays and scalars as a dtype and a tensor
    (torch.compile returns 0-d arrays for numpy scalars), an iterator (a returned generator, zip, map;
    torch.compile may return another iterator type) as the items left in it, a namedtuple as a dict of its class name and
    fields, a user object (eager's and compiled's are distinct objects) as its class name and
    ``vars()``, a module as its class name and state; anything else as it is."""
    if isinstance(value, (np.ndarray, np.generic)):  # a numpy scalar is compared as a 0-d array
        value = np.asarray(value)
        if value.dtype.kind in "USOV":
            return {"ndarray": str(value.dtype), "values": value.tolist()}
        return {"ndarray": str(value.dtype), "values": torch.from_numpy(np.ascontiguousarray(value))}
    if isinstance(value, _LEAVES) or id(value) in seen:
        return value
    seen = seen | {id(value)}
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return {"namedtuple": type(value).__name__, **{f: plain(getattr(value, f), seen) for f in value._fields}}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v, seen) for v in value) if type(value) in (list, tuple) else value
    if type(value) is dict:
        return {k: plain(v, seen) for k, v in value.items()}
    if isinstance(value, (type({}.keys()), type({}.values()), type({}.items()))):
        return {type(value).__name__: [plain(v, seen) for v in value]}
    if isinstance(value, collections.abc.Mapping) and not isinstance(value, dict):  # mappingproxy, UserDict
        return {type(value).__name__: {k: plain(v, seen) for k, v in value.items()}}
    if isinstance(value, collections.abc.Iterator) and not isinstance(value, torch.Tensor):
        return {"iterator": [plain(v, seen) for v in value]}  # consumed; any iterator type
    if isinstance(value, (set, frozenset)) and any(isinstance(v, torch.Tensor) for v in value):
        return {type(value).__name__: sorted(repr(v.tolist()) if isinstance(v, torch.Tensor) else repr(v)
                                             for v in value)}  # tensors hash by identity
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"dataclass": type(value).__name__,
                **{f.name: plain(getattr(value, f.name), seen) for f in dataclasses.fields(value)}}
    if isinstance(value, torch.nn.Module):
        return {"module": type(value).__name__, **_module_state(value)}
    if type(value).__eq__ is object.__eq__:
        fields = vars(value) if hasattr(value, "__dict__") else {}
        return {"object": type(value).__name__, **{k: plain(v, seen) for k, v in fields.items()}}
    return value


def fresh(*objs: Any) -> Callable[[], tuple]:
    """An argument set of deep copies of ``objs``, made anew for each run (objects, modules)."""
    return lambda: copy.deepcopy(objs)
