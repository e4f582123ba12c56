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
Python). Their Python checks stay in ``reasons``, which names the one that failed.
"""
from __future__ import annotations

import dataclasses
import weakref
from typing import Any, Callable, Sequence

import torch

from . import native_guards
from .capture.sources import AttrSource, Constants, Source, literal
from .shape_relations import OPS, Linear

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
    #: For a constant attribute (``type(a) is T and a == v``, or a tuple of primitives): (type,
    #: value, item types or None), checked in C++ on the attribute's object when its source is
    #: an attribute.
    constant: tuple | None = None

    def expr(self, consts: Constants) -> str:
        return self.template.format(*(f"({s.expr(consts)})" for s in self.sources))


class GuardSet:
    """Collects checks during a capture, one set of checks per source."""

    def __init__(self) -> None:
        self.consts = Constants()
        self.checks: list[Check] = []
        self._seen: set[tuple[str, str]] = set()

    def _add(self, kind: str, sources: tuple[Source, ...], template: str, description: str,
             tensor_spec: tuple | None = None, constant: tuple | None = None) -> None:
        key = (kind, "|".join(s.describe() for s in sources))
        if key in self._seen:
            return
        self._seen.add(key)
        self.checks.append(Check(template, sources, description, tensor_spec, plain_module=kind == "plain_call",
                                 constant=constant))

    def type_match(self, source: Source, value: Any) -> None:
        t = self.consts.name(type(value), "t")
        self._add("type", (source,), f"type({{0}}) is {t}", f"{source.describe()}: type is {type(value).__qualname__}")

    def equals(self, source: Source, value: Any) -> None:
        """Type and value in one check (``True != 1``, ``1.0 != 1`` here)."""
        t = self.consts.name(type(value), "t")
        constant = None
        if isinstance(value, float) and value != value:
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
                  constant=constant)

    def constant_tuple(self, source: Source, value: tuple) -> None:
        """A tuple of primitives: the very same (immutable) tuple object, or an equal tuple whose
        items have the same types; the first is one pointer comparison per call."""
        c = self.consts.name(value, "v")
        types = self.consts.name(tuple(type(v) for v in value), "v")
        same = f"type({{0}}) is tuple and {{0}} == {c} and tuple(map(type, {{0}})) == {types}"
        self._add("equals", (source,), f"{{0}} is {c} or ({same})", f"{source.describe()} == {value!r}",
                  constant=(tuple, value, tuple(type(v) for v in value)))

    def identity(self, source: Source, value: Any) -> None:
        """Same object; held through a weak reference where the object allows it."""
        try:
            ref = weakref.ref(value)
            template = f"{{0}} is {self.consts.name(ref, 'w')}()"
        except TypeError:
            template = f"{{0}} is {self.consts.name(value, 'o')}"
        self._add("identity", (source,), template,
                  f"{source.describe()} is the same {type(value).__qualname__} object")

    def length(self, source: Source, value: Any) -> None:
        t = self.consts.name(type(value), "t")
        self._add("len", (source,), f"type({{0}}) is {t} and len({{0}}) == {len(value)}",
                  f"{source.describe()}: {type(value).__qualname__} of length {len(value)}")

    def dict_keys(self, source: Source, value: dict) -> None:
        t = self.consts.name(type(value), "t")
        keys = self.consts.name(tuple(value.keys()), "keys")
        self._add("keys", (source,), f"type({{0}}) is {t} and tuple({{0}}.keys()) == {keys}",
                  f"{source.describe()} keys == {tuple(value.keys())!r}")

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
        src = _GuardWriter(self.consts, native_guards.tensor_match()).write(name, self.checks, inputs)
        namespace: dict[str, Any] = dict(self.consts.values)
        exec(compile(src, f"<ember {name}>", "exec"), namespace)
        guard_fn = namespace[name]
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


_PROPS = {"size": 0, "stride": 1, "storage_offset": 2}  # their codes in tensor_match.cpp
_OP_CODES = {op: i for i, op in enumerate(OPS.values())}


def _key(source: Source) -> Any:
    """Sources compare equal when they read the same thing; an unhashable one is itself."""
    try:
        hash(source)
    except TypeError:
        return id(source)
    return source


def _packed(relation: Linear, position: dict[Any, int]) -> tuple:
    """``relation`` as tensor_match.cpp takes it: ((tensor, prop, dim, coefficient)...),
    constant, op, modulus, offset; ``position`` gives each tensor's place in the C++ call."""
    terms = tuple((position[_key(tensor)], _PROPS[prop], dim, c) for (tensor, prop, dim), c in relation.terms)
    return terms, relation.constant, _OP_CODES[relation.op], relation.modulus, relation.offset


#: Tensor types whose metadata Python reads straight from the C++ tensor (no Python override of
#: ``shape`` and the like), so that the C++ check sees what the Python check would.
_NATIVE_TYPES = (torch.Tensor, torch.nn.Parameter)


class _GuardWriter:
    """Writes the guard as straight-line code, one local per source, each computed once. With
    ``tensor_match`` (the C++ check), the checks of plain tensors, the linear shape relations
    over their sizes, the hook checks of modules (``plain_module_call``) and the constant
    attributes (``equals``/``constant_tuple`` of an ``AttrSource``, given the attribute's object)
    become one call at the end."""

    def __init__(self, consts: Constants, tensor_match: type | None = None) -> None:
        self.consts = consts
        self.tensor_match = tensor_match
        self.names: dict[Any, str] = {}
        self.lines: list[str] = []

    def local(self, source: Source) -> str:
        key = _key(source)
        name = self.names.get(key)
        if name is None:
            base = getattr(source, "base", None)
            expr = source.apply(self.local(base), self.consts) if base is not None else source.expr(self.consts)
            name = self.names[key] = f"v{len(self.names)}"
            self.lines.append(f"        {name} = {expr}")
        return name

    def write(self, name: str, checks: list[Check], inputs: Sequence[Source]) -> str:
        native = [c for c in checks if self.tensor_match is not None and c.tensor_spec is not None
                  and c.tensor_spec[0] in _NATIVE_TYPES]
        modules = [c for c in checks if self.tensor_match is not None and c.plain_module]
        constants = [c for c in checks if self.tensor_match is not None and c.constant is not None
                     and isinstance(c.sources[0], AttrSource)]
        position = {_key(c.sources[0]): i for i, c in enumerate(native)}
        read_in_cpp = {id(c) for c in constants}  # the attribute itself is read in C++
        in_native = {id(c) for c in native + modules} | read_in_cpp
        relations: list[tuple] = []
        for check in checks:
            if check.relations is not None and native and \
                    all(_key(read[0]) in position for r in check.relations for read, _ in r.terms):
                relations.extend(_packed(r, position) for r in check.relations)
                continue
            if id(check) in in_native:
                if id(check) not in read_in_cpp:
                    self.local(check.sources[0])
                continue
            local_names = [self.local(s) for s in check.sources]
            test = check.template.format(*local_names)
            self.lines.append(f"        if not ({test}):\n            return None")
        if native or modules or constants:
            specs = tuple(c.tensor_spec for c in native)
            attrs = tuple((c.sources[0].attr, *c.constant) for c in constants)
            match = self.consts.name(self.tensor_match(specs, tuple(relations), len(modules), attrs), "tensor_match")
            objects = "".join(f"{self.local(c.sources[0])}, " for c in native + modules)
            objects += "".join(f"{self.local(c.sources[0].base)}, " for c in constants)  # their attributes
            self.lines.append(f"        if not {match}(({objects})):\n            return None")
        values = "".join(f"{self.local(s)}, " for s in inputs)
        body = "\n".join(self.lines) or "        pass"
        return (f"def {name}(L):\n    try:\n{body}\n        return ({values})\n"
                f"    except Exception:\n        return None\n")
