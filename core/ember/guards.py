"""Guards: the checks that decide whether a cached compilation is valid for a new call.

The capture records, for every input it read, the weakest check that keeps the compiled code
right (tensor metadata, constant values, object identity, container lengths and keys, global
torch state). :meth:`GuardSet.compile` turns them into ONE generated Python function
``guard(L) -> tuple | None`` (the hot path): each source is computed once into a local variable
and shared by every check below it (``L['self']._modules['layer1']`` is looked up once, not once
per parameter). When every check passes it returns the graph's inputs, read from those same
locals, so the runner does not look them up again (a densenet121 has 727 of them); else None. A
slower ``reasons(L) -> list[str]`` names the checks that failed, used only to explain a
recompilation.

Tensor checks are most of a model's guard (densenet121 reads 607 tensors). Once
:mod:`ember.native_guards` has its C++ helper, the checks of plain tensors and parameters are
left out of the straight-line code and done by one C++ call at the end, over all of them; so are
the shape relations between their sizes and strides that are linear (duck sizing ``s0 == s1``,
bounds, ``s0 % 8 == 0``, ``x.stride(0) == 256*s1``), in the form :mod:`ember.shape_relations`
parsed them into once, and the hook checks of modules called as their class's forward (no own
``forward``, empty hook tables: one per module, a fifth of a convolutional model's guard in
Python). The reads of the sources themselves and the simple checks on them (types, constants,
dict keys, lengths, identity) go to the C++ ``SourceWalk`` (:mod:`ember.guard_writer` writes
the guard). Their Python checks stay in ``reasons``, which names the one that failed.
"""
from __future__ import annotations

import dataclasses
import weakref
from typing import Any, Callable, Sequence

import torch

from . import native_guards
from .codegen import check_names
from .capture.sources import Constants, Source, literal
from .guard_writer import EQUALS, IS, IS_WEAK, KEYS, LEN, TYPE, GuardWriter

GuardFn = Callable[[dict], "tuple | None"]
_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


@dataclasses.dataclass
class Check:
    """A boolean template over sources (``{0}``, ``{1}``...) with a description for logs."""

    template: str
    sources: tuple[Source, ...]
    description: str
    #: For a tensor check: (type, dtype, device, shape, stride, requires_grad), the spec that
    #: native_guards.tensor_match() checks in C++.
    tensor_spec: tuple | None = None
    #: For a shape relation in linear form: its parts, each read a (tensor source, "size" |
    #: "stride" | "storage_offset", dim); checked in C++ when those tensors are.
    relations: tuple[Linear, ...] | None = None
    #: A module called as its class's forward with no hooks: checked in C++ with the tensors.
    plain_module: bool = False
    #: The check as a step of the C++ source walk (source_walk.cpp): (kind, *arguments); None
    #: for checks that stay in Python. A constant (``type(a) is T and a == v``, or a tuple of
    #: primitives) is (EQUALS, type, value, item types or None), which TensorMatch also takes for
    #: an attribute the walk cannot read.
    walk: tuple | None = None

    def expr(self, consts: Constants) -> str:
        return self.template.format(*(f"({s.expr(consts)})" for s in self.sources))


def _same_keys(mapping: dict, keys: tuple, by_identity: tuple) -> bool:
    """Whether ``mapping``'s keys are ``keys`` in order: the same objects where ``by_identity``
    says so, equal values of the same types elsewhere."""
    now = tuple(dict.keys(mapping))
    return len(now) == len(keys) and all(a is b if ident else type(a) is type(b) and a == b
                                         for a, b, ident in zip(now, keys, by_identity))


class GuardSet:
    """Collects checks during a capture, one set of checks per source."""

    def __init__(self) -> None:
        self.consts = Constants()
        self.checks: list[Check] = []
        self._seen: set[tuple[str, str]] = set()

    def _add(self, kind: str, sources: tuple[Source, ...], template: str, description: str,
             tensor_spec: tuple | None = None, walk: tuple | None = None) -> None:
        key = (kind, "|".join(s.describe() for s in sources))
        if key in self._seen:
            return
        self._seen.add(key)
        self.checks.append(Check(template, sources, description, tensor_spec, plain_module=kind == "plain_call",
                                 walk=walk))

    def type_match(self, source: Source, value: Any) -> None:
        t = self.consts.name(type(value), "t")
        self._add("type", (source,), f"type({{0}}) is {t}", f"{source.describe()}: type is {type(value).__qualname__}",
                  walk=(TYPE, type(value)))

    def equals(self, source: Source, value: Any) -> None:
        """Type and value in one check (``True != 1``, ``1.0 != 1`` here)."""
        t = self.consts.name(type(value), "t")
        constant = None
        if (isinstance(value, float) or type(value).__module__ == "numpy") and value != value:  # NaN, numpy's too
            test = "{0} != {0}"
        elif (text := literal(value)) is not None:
            test = "{0} == " + text.replace("{", "{{").replace("}", "}}")
            constant = (type(value), value, None)
        elif isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
            test = f"{{0}} is {self.consts.name(value, 'v')}"
        elif isinstance(value, (set, frozenset)):  # a copy (the set may change), in its iteration order
            test = f"tuple({{0}}) == {self.consts.name(tuple(value), 'v')}"
        else:
            test = f"{{0}} == {self.consts.name(value, 'v')}"
            constant = (type(value), value, None)
        self._add("equals", (source,), f"type({{0}}) is {t} and {test}", f"{source.describe()} == {value!r}",
                  walk=None if constant is None else (EQUALS, *constant))

    def constant_tuple(self, source: Source, value: tuple) -> None:
        """A tuple of primitives: the very same (immutable) tuple object, or an equal tuple whose
        items have the same types; the first is one pointer comparison per call."""
        c = self.consts.name(value, "v")
        types = self.consts.name(tuple(type(v) for v in value), "v")
        same = f"type({{0}}) is tuple and {{0}} == {c} and tuple(map(type, {{0}})) == {types}"
        self._add("equals", (source,), f"{{0}} is {c} or ({same})", f"{source.describe()} == {value!r}",
                  walk=(EQUALS, tuple, value, tuple(type(v) for v in value)))

    def identity(self, source: Source, value: Any) -> None:
        """Same object; held through a weak reference where the object allows it."""
        try:
            ref = weakref.ref(value)
            template, walk = f"{{0}} is {self.consts.name(ref, 'w')}()", (IS_WEAK, ref)
        except TypeError:
            template, walk = f"{{0}} is {self.consts.name(value, 'o')}", (IS, value)
        self._add("identity", (source,), template,
                  f"{source.describe()} is the same {type(value).__qualname__} object", walk=walk)

    def array_content(self, source: Source, value: Any) -> None:
        """A numpy array by type, dtype, shape and elements (a copy): indexing or slicing an array
        makes a new object on every read, so no identity holds from one call to the next."""
        import numpy as np

        copy = self.consts.name(value.copy(), "v")
        equal = self.consts.name(np.array_equal, "f")
        self._add("equals", (source,), f"type({{0}}) is {self.consts.name(type(value), 't')} and {{0}}.dtype == "
                  f"{copy}.dtype and {{0}}.shape == {copy}.shape and {equal}({{0}}, {copy}, equal_nan={copy}.dtype.kind in 'fc')",
                  f"{source.describe()} is an array equal to {value!r}")

    def length(self, source: Source, value: Any) -> None:
        t = self.consts.name(type(value), "t")
        self._add("len", (source,), f"type({{0}}) is {t} and len({{0}}) == {len(value)}",
                  f"{source.describe()}: {type(value).__qualname__} of length {len(value)}",
                  walk=(LEN, type(value), len(value)))

    def dict_keys(self, source: Source, value: dict, by_identity: list[bool] | None = None) -> None:
        """The dict's type and keys in order; the keys marked in ``by_identity`` (tensors, objects
        hashed by identity) are compared with ``is``, never ``==``."""
        t = self.consts.name(type(value), "t")
        keys = self.consts.name(tuple(value.keys()), "keys")
        if by_identity and any(by_identity):
            same = self.consts.name(_same_keys, "f")
            marks = self.consts.name(tuple(by_identity), "m")
            self._add("keys", (source,), f"type({{0}}) is {t} and {same}({{0}}, {keys}, {marks})",
                      f"{source.describe()} keys are {len(value)} keys, {sum(by_identity)} of them these objects")
            return
        self._add("keys", (source,), f"type({{0}}) is {t} and tuple({{0}}.keys()) == {keys}",
                  f"{source.describe()} keys == {tuple(value.keys())!r}",
                  walk=(KEYS, tuple(value.keys())) if type(value) is dict else None)

    def container_keys(self, source: Source, value: Any, reader: Any) -> None:
        """An instance of a dict or set subclass: its type, and its keys (elements) in order, read
        through the builtin's own ``reader`` (``dict.keys``, ``set.__iter__``): no override of its
        class runs in the guard."""
        t = self.consts.name(type(value), "t")
        keys = tuple(reader(value))
        self._add("keys", (source,), f"type({{0}}) is {t} and tuple({self.consts.name(reader, 'm')}({{0}})) == "
                  f"{self.consts.name(keys, 'keys')}", f"{source.describe()} keys == {keys!r}")

    def tensor(self, source: Source, t: torch.Tensor, fake: torch.Tensor | None = None) -> None:
        """Type, dtype, device, sizes, strides and requires_grad; a size or stride that is
        symbolic in ``fake`` (a dynamic dimension) is not compared here: -1 in the spec, "any"
        (the relations between such sizes are guarded by :mod:`ember.shape_guards`)."""
        shape, stride = tuple(t.shape), tuple(t.stride())
        if fake is not None:
            shape = tuple(s if type(s) is int else -1 for s in fake.shape)
            stride = tuple(s if type(s) is int else -1 for s in fake.stride())
        spec = (type(t), t.dtype, t.device, shape, stride, t.requires_grad)
        kind, dtype, device, shape, stride, grad = spec
        c = self.consts
        if -1 in shape or -1 in stride:
            sizes = "".join(f" and {{0}}.size({i}) == {s}" for i, s in enumerate(shape) if s != -1)
            strides = "".join(f" and {{0}}.stride({i}) == {s}" for i, s in enumerate(stride) if s != -1)
            layout = f" and {{0}}.dim() == {len(shape)}{sizes}{strides}"
        else:
            layout = f" and {{0}}.shape == {shape!r} and {{0}}.stride() == {stride!r}"
        template = (
            f"type({{0}}) is {c.name(kind, 't')}"
            f" and {{0}}.dtype is {c.name(dtype, 'dtype')}"
            f" and {{0}}.device == {c.name(device, 'dev')}"
            f"{layout}"
            f" and {{0}}.requires_grad is {grad!r}"
        )
        desc = (f"{source.describe()}: {kind.__name__} {dtype} {device} shape={_shown(shape)} "
                f"stride={_shown(stride)} requires_grad={grad}")
        self._add("tensor", (source,), template, desc, spec)

    def lacks(self, source: Source, name: str) -> None:
        """``hasattr(obj, name)`` was False."""
        self._add("lacks", (source,), f"not hasattr({{0}}, {name!r})", f"{source.describe()} has no {name!r}")

    def plain_module_call(self, source: Source) -> None:
        """A module called as its class's forward with no hooks of its own (one check, read from
        its ``__dict__``: a third faster than four attribute reads)."""
        tables = " or ".join(f"___d[{t!r}]" for t in _HOOK_TABLES[:-1])
        self._add("plain_call", (source,),
                  f"'forward' not in (___d := {{0}}.__dict__) and not ({tables} or ___d.get({_HOOK_TABLES[-1]!r}))",
                  f"{source.describe()} has no hooks and no forward of its own")

    def same_object(self, a: Source, b: Source) -> None:
        if a == b:  # one source reached twice: nothing to check
            return
        self._add("alias", (a, b), "{0} is {1}", f"{a.describe()} is {b.describe()}")

    def distinct(self, sources: list[Source]) -> None:
        if len(sources) < 2:
            return
        ids = ", ".join(f"id({{{i}}})" for i in range(len(sources)))
        names = ", ".join(s.describe() for s in sources)
        self._add("distinct", tuple(sources), "len({{" + ids + "}}) == " + str(len(sources)),
                  f"{names} are distinct objects")

    def _global_flag(self, fn: Callable[[], bool], what: str) -> None:
        enabled = fn()
        name = self.consts.name(fn, "f")
        self.checks.append(Check(f"{name}() is {enabled}", (), f"{what} is {'on' if enabled else 'off'}"))

    def grad_mode(self) -> None:
        self._global_flag(torch.is_grad_enabled, "grad mode")

    def inference_mode(self) -> None:
        self._global_flag(torch.is_inference_mode_enabled, "inference mode")

    def deterministic(self) -> None:
        """Backends choose kernels by it (the inductor's atomic adds): a graph compiled under
        one setting is not run under the other."""
        # the C function itself: torch.are_deterministic_algorithms_enabled adds a Python frame
        # to every guard check
        self._global_flag(torch._C._get_deterministic_algorithms, "deterministic algorithms")

    def dispatch_mode(self) -> None:
        """A TorchDispatchMode that capture does not run under is active (capture/dispatch_modes.py)."""
        from .capture.dispatch_modes import blocking_mode_active

        self._global_flag(blocking_mode_active, "a TorchDispatchMode")

    def autocast(self) -> None:
        """Autocast changes the dtypes ops produce: guard whether it is on, and how."""
        if not torch._C._is_any_autocast_enabled():
            self._global_flag(torch._C._is_any_autocast_enabled, "autocast")
            return
        for device in ("cpu", "cuda"):
            enabled = torch.is_autocast_enabled(device)
            dtype = torch.get_autocast_dtype(device)
            on, get = self.consts.name(torch.is_autocast_enabled, "f"), self.consts.name(torch.get_autocast_dtype, "f")
            self.checks.append(Check(f"{on}({device!r}) is {enabled} and {get}({device!r}) is {self.consts.name(dtype, 'dtype')}",
                                     (), f"autocast on {device} is {'on' if enabled else 'off'} ({dtype})"))

    def compile(self, inputs: Sequence[Source] = (), name: str = "guard"
                ) -> tuple[GuardFn, Callable[[dict], list[str]]]:
        """Generate ``guard(L)`` (returning the values of ``inputs``, or None) and ``reasons(L)``."""
        src = GuardWriter(self.consts, native_guards.tensor_match(), native_guards.source_walk()
                          ).write(name, self.checks, inputs)
        namespace: dict[str, Any] = dict(self.consts.values)
        exec(compile(src, f"<ember {name}>", "exec"), namespace)
        guard_fn = namespace[name]
        check_names(guard_fn)
        guard_fn.__ember_source__ = src
        checks = list(self.checks)
        consts = self.consts

        def reasons(L: dict) -> list[str]:
            failed = []
            for check in checks:
                try:
                    expr = check.expr(consts)
                    ok = eval(expr, dict(consts.values), {"L": L})
                except Exception as exc:  # the source itself is gone
                    failed.append(f"{check.description} ({type(exc).__name__})")
                    continue
                if not ok:
                    failed.append(check.description)
            return failed

        return guard_fn, reasons

    def describe(self) -> list[str]:
        return [c.description for c in self.checks]


def _shown(sizes: tuple[int, ...]) -> str:
    """``(4, 8)``, with ``*`` for a dynamic size: ``(*, 8)``."""
    return repr(sizes) if -1 not in sizes else "(" + ", ".join("*" if s == -1 else str(s) for s in sizes) + ")"
