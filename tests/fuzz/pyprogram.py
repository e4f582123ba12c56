"""A fuzzed Python program (``PyProgram``): module-level state, a function ``f`` that reads and
mutates it, and the mutations applied to that state between calls; and the ``Twin`` that runs it.

A ``PyProgram`` is plain data that prints as a Python literal (a minimal reproduction pastes into
``pyregressions.py``), rendered as one module::

    <setup: globals, classes, helper functions, objects>
    def _outer():
        <cells: f's closure variables>
        def f(<params>, *, <keyword parameters with defaults>):
            global ...; nonlocal ...          (hoisted from the statements)
            <stmts>
            return (<outputs>,)
        return f
    f = _outer()

Call ``k`` (0 .. ``calls`` - 1) first runs the mutations ``(k, statement)`` at module level, then
``f(*args)`` (``args``: expressions evaluated in the module each call), then, when ``grad``, a
backward through the float tensors ``f`` returned. The shrinker removes setup statements,
statements, outputs and mutations (the fields in ``PARTS``).

Each ``Twin`` executes the module into its own namespace, so the eager twin and the compiled twin
own separate copies of all state. Process-global state (environment variables named
``EMBER_FUZZ_*`` and the attributes of ``tests.fuzz.pyflags``) is per twin too: ``GlobalState``
swaps each twin's values in while it runs.
"""
from __future__ import annotations

import dataclasses
import linecache
import os
import re
import sys
import types
import warnings
from typing import Any, Callable, Iterator

import torch

import ember
from tests.fuzz import pyflags
from tests.fuzz.harness import BACKEND_OPTIONS

ENV_PREFIX = "EMBER_FUZZ_"

PRELUDE = ("import dataclasses, math, os, types\nimport numpy as np\nimport torch\n"
           "from tests.fuzz import pyflags\nfrom tests.fuzz.pyprogram import cell, rand, set_cell\n")


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    """A float32 tensor of normal values, the same for the same seed."""
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _cell(fn: Callable, name: str) -> Any:
    return fn.__closure__[fn.__code__.co_freevars.index(name)] if name in fn.__code__.co_freevars else None


def cell(fn: Callable, name: str) -> Any:
    """The value of ``fn``'s closure variable ``name``."""
    return _cell(fn, name).cell_contents


def set_cell(fn: Callable, name: str, value: Any) -> None:
    """Rebinds ``fn``'s closure variable ``name`` (nothing if ``fn`` no longer reads it)."""
    if (c := _cell(fn, name)) is not None:
        c.cell_contents = value


_HOISTED = re.compile(r"^(global|nonlocal) ")


@dataclasses.dataclass(frozen=True)
class PyProgram:
    setup: tuple[str, ...]
    stmts: tuple[str, ...]
    outputs: tuple[str, ...]
    args: tuple[tuple[str, str], ...] = ()
    cells: tuple[tuple[str, str], ...] = ()
    kwparams: tuple[tuple[str, str], ...] = ()
    mutations: tuple[tuple[int, str], ...] = ()
    calls: int = 3
    grad: bool = False
    seed: int = 0
    variants: tuple[str, ...] = ()

    #: the fields the shrinker reduces, with the length each keeps at least
    PARTS = (("outputs", 1), ("mutations", 0), ("stmts", 0), ("setup", 0), ("cells", 0), ("kwparams", 0),
             ("args", 1))

    @property
    def source(self) -> str:
        hoisted: dict[str, list[str]] = {"global": [], "nonlocal": []}
        body: list[str] = []
        for stmt in self.stmts:
            for line in stmt.splitlines():
                if (m := _HOISTED.match(line)):
                    names = [n.strip() for n in line[m.end():].split(",")]
                    hoisted[m.group(1)] += [n for n in names if n not in hoisted[m.group(1)]]
                else:
                    body.append(line)
        params = [p for p, _ in self.args]
        if self.kwparams:
            params += ["*"] + [f"{p}={v}" for p, v in self.kwparams]
        lines = [f"{kind} {', '.join(names)}" for kind, names in hoisted.items() if names]
        lines += body + [f"return ({', '.join(self.outputs)},)"]
        inner = "".join(f"    {name} = {value}\n" for name, value in self.cells)
        inner += f"    def f({', '.join(params)}):\n" + "".join(f"        {line}\n" for line in lines)
        return PRELUDE + "".join(s + "\n" for s in self.setup) + "def _outer():\n" + inner \
            + "    return f\nf = _outer()\n"

    def simplifications(self) -> Iterator["PyProgram"]:
        """Simpler variants for the shrinker: fewer calls (their mutations dropped), no backward,
        only ``acc`` returned."""
        for calls in range(1, self.calls):
            yield dataclasses.replace(self, calls=calls, mutations=tuple(m for m in self.mutations if m[0] < calls))
        if self.grad:
            yield dataclasses.replace(self, grad=False)
        if self.outputs != ("acc",):
            yield dataclasses.replace(self, outputs=("acc",))

    def mutations_before(self, call: int) -> list[str]:
        return [stmt for k, stmt in self.mutations if k == call]


class GlobalState:
    """One twin's process-global state: its ``EMBER_FUZZ_*`` environment variables and the
    attributes of ``pyflags``; ``with state:`` puts them in place and saves them back after."""

    def __init__(self) -> None:
        self.env: dict[str, str] = {}
        self.flags: dict[str, Any] = pyflags.fresh()

    def __enter__(self) -> "GlobalState":
        for key in [k for k in os.environ if k.startswith(ENV_PREFIX)]:
            del os.environ[key]
        os.environ.update(self.env)
        for name, value in self.flags.items():
            setattr(pyflags, name, value)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIX)}
        self.flags = {name: getattr(pyflags, name) for name in pyflags.DEFAULTS}
        for key in self.env:
            del os.environ[key]


def _float_tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors in an output (in containers and objects' attributes), in a fixed order."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 3 and isinstance(value, (list, tuple)):
        for v in value:
            yield from _float_tensors(v, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for v in value.values():
            yield from _float_tensors(v, depth + 1)
    elif depth < 3 and hasattr(value, "__dict__") and not isinstance(value, (type, torch.nn.Module)) \
            and not callable(value):
        for v in vars(value).values():
            yield from _float_tensors(v, depth + 1)


class Twin:
    """One copy of a program's module (``sys.modules["pyfuzz_<role>"]`` until the next twin of that
    role): eager (``backend`` None) or with ``f`` compiled by ``ember.compile(backend=...)``.
    Executing the setup may raise (the program is invalid)."""

    def __init__(self, program: PyProgram, backend: Any = None, role: str = "eager") -> None:
        self.program = program
        self.state = GlobalState()
        source = program.source
        filename = f"<pyfuzz-{abs(hash(program))}-{role}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        module = types.ModuleType(f"pyfuzz_{role}")  # a real module: dataclasses look theirs up
        sys.modules[module.__name__] = module
        self.ns: dict[str, Any] = module.__dict__
        with self.state, warnings.catch_warnings(), torch.random.fork_rng(devices=[]):  # setup seeds torch
            warnings.simplefilter("ignore")
            exec(compile(source, filename, "exec"), self.ns)
        self.fn = self.ns["f"]
        if backend is not None:
            options = BACKEND_OPTIONS.get(backend) if isinstance(backend, str) else None
            self.fn = ember.compile(self.fn, backend=backend, options=options)

    def call(self, k: int) -> tuple:
        """Call ``k``: its mutations, ``f``, and the backward when the program has one."""
        with self.state, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for stmt in self.program.mutations_before(k):
                exec(stmt, self.ns)
            out = self.fn(*[eval(expr, self.ns) for _, expr in self.program.args])
            if self.program.grad:
                seen: set[int] = set()
                terms = []
                for t in _float_tensors(out):
                    if t.requires_grad and t.dtype.is_floating_point and id(t) not in seen:
                        seen.add(id(t))
                        w = torch.randn(t.shape, generator=torch.Generator().manual_seed(777 + len(terms)))
                        terms.append((t * w).sum().double())
                if terms:
                    torch.stack(terms).sum().backward()
        return out
