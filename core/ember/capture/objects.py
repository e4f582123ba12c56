"""Objects built inside captured code over fake tensors (dataclasses such as HuggingFace's ModelOutput).

The object is really constructed at capture time, over fake tensors: a *shadow*. Reads of its
attributes, items and builtin methods run on the shadow, and what they give is mapped back to
the Vars it stands for (:func:`from_shadow`): a fake tensor to its graph value, a stand-in to
the Var it was made for (:func:`to_shadow` gives each list or dict handed to real code one
stand-in, refreshed before real code runs, so that the object and the capture share it).

Mutations (attribute and item stores and deletions, a builtin method such as ``list.append`` on
a list the constructor made) run for real on the shadow, through the class's own
``__setattr__``/``__setitem__``, and are logged on the object; the runner rebuilds the object by
calling the constructor again with the real values and replaying the log in order, so it ends as
the shadow did (CLIP's ``text_outputs.pooler_output = ...``). A list, dict or object that the
object's own code made (a ``field(default_factory=list)``) is a :class:`ShadowVar` too: the path
from its object says where the runner finds it, and its mutations are logged on that object.
What cannot be replayed as it happened (a mutation that raises, real code changing a container it
was handed, an object of unknown origin) breaks the graph instead: a mutation is never lost.
"""
from __future__ import annotations

import dataclasses
import enum
import inspect
import operator
import types
from typing import TYPE_CHECKING, Any, Callable

import torch

from ..errors import Unsupported
from .container_types import read_through_descriptor
from .dispatch import handles_attr, handles_call, handles_iter, handles_len, handles_store, handles_truth, iterate
from .exceptions import throw
from .inline import call_dunder, class_member
from .side_effects import DELETED
from .user_objects import UserObjectVar
from .values import ConstVar, DictVar, DictViewVar, Identity, ListVar, TensorVar, TupleVar, UserDictVar, UserSetVar, Var

if TYPE_CHECKING:
    from .frame import Frame
    from .output import OutputBuilder

#: values that stand for themselves (equal ones may share an id): constants, never owned by an object
_BY_VALUE = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), frozenset, range, slice,
             torch.dtype, torch.device, torch.Size, torch.memory_format, torch.layout, enum.Enum, type,
             types.FunctionType, types.BuiltinFunctionType, types.ModuleType)

#: a step of a path from an object to a value inside it: ("attr", name) or ("item", key)
Path = tuple[tuple[str, Any], ...]


class ShadowVar(Var):
    """A real object inside an object built over fake tensors: ``value``, found from ``root``'s
    shadow by ``path`` (None: its origin is unknown; it may be read, not mutated or returned)."""

    def __init__(self, root: "ObjectVar", path: Path | None, value: Any) -> None:
        self.root = root
        self.path = path
        self.value = value

    def python_type(self) -> type:
        return type(self.value)


class ObjectVar(ShadowVar):
    """The object a constructor call built: its shadow, the call, and the log of its mutations."""

    def __init__(self, shadow: Any, cls: type, args: list[Var], kwargs: dict[str, Var]) -> None:
        super().__init__(self, (), shadow)
        self.cls = cls
        self.args = args
        self.kwargs = kwargs
        #: (step, arguments): ``step(obj, *arguments)`` replays one mutation on the rebuilt object
        self.mutations: list[tuple[Callable[..., Any], list[Var]]] = []
        self.diverged = False  # the shadow holds a mutation the log lost (rolled back, or raised)
        self.rebuilding = False  # its rebuild is being written (a cycle reaches it again)

    @property
    def shadow(self) -> Any:
        return self.value

    def save(self) -> int:
        """What the capture's undo log keeps (see CaptureState.remember)."""
        return len(self.mutations)

    def restore(self, saved: int) -> None:
        if len(self.mutations) > saved:
            del self.mutations[saved:]
            self.diverged = True  # the shadow is not rolled back: no part of it is rebuilt from it


@dataclasses.dataclass(frozen=True)
class AtPath:
    """``fn(value at path from obj, *args)``: a logged mutation of a value inside the object, or
    (``fn`` None) the value itself."""

    path: Path
    fn: Callable[..., Any] | None = None

    def __call__(self, obj: Any, *args: Any) -> Any:
        for kind, key in self.path:
            obj = getattr(obj, key) if kind == "attr" else obj[key]
        return obj if self.fn is None else self.fn(obj, *args)


class ShadowMethod(Var):
    """A builtin method of a shadow value (``OrderedDict.keys``, ``list.append``), unbound:
    ``descriptor(owner's value, *args)``."""

    def __init__(self, owner: ShadowVar, descriptor: Any, name: str) -> None:
        self.owner = owner
        self.descriptor = descriptor
        self.name = name


def constructible(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls) and not issubclass(cls, torch.nn.Module)


def _extend(path: Path | None, kind: str, key: Any) -> Path | None:
    return None if path is None else (*path, (kind, key))


# -- between Vars and real values ------------------------------------------------------------
def to_shadow(frame: "Frame", var: Var) -> Any:
    """The real value standing for ``var`` in an object built over fake tensors."""
    if isinstance(var, TensorVar):
        return var.fake
    if isinstance(var, ConstVar):
        if not isinstance(var.value, _BY_VALUE):  # an object passed in (a KV cache) maps back to its Var
            frame.state.shadows.setdefault(id(var.value), var)
        return var.value
    if isinstance(var, ShadowVar):
        return var.value
    if isinstance(var, UserObjectVar):  # an empty stand-in of its class, mapped back by from_shadow
        if var.stand_in is None:
            var.stand_in = var.cls.__new__(var.cls)
            frame.state.shadows[id(var.stand_in)] = var
        return var.stand_in
    if isinstance(var, (UserDictVar, UserSetVar)):  # real code would run its class's overrides
        frame.fail(f"a {var.python_type().__name__} (a container subclass) handed to an object built in captured code")
    if isinstance(var, (ListVar, DictVar)):
        return _stand_in(frame, var)
    if isinstance(var, TupleVar):
        items = [to_shadow(frame, v) for v in var.items]
        return var.tuple_type(*items) if hasattr(var.tuple_type, "_fields") else var.tuple_type(items)
    frame.fail(f"a {type(var).__name__} cannot be stored in an object built in captured code")
    raise AssertionError


def _stand_in(frame: "Frame", var: ListVar | DictVar) -> Any:
    """The one real list or dict standing for ``var``, filled with its current items."""
    state = frame.state
    entry = state.stand_ins.get(id(var))
    if entry is None:
        stand_in = [] if isinstance(var, ListVar) else var.dict_type()
        state.shadows[id(stand_in)] = var
        entry = state.stand_ins[id(var)] = [var, stand_in, None]
    _fill(frame, entry)
    return entry[1]


def _contents(value: Any) -> tuple:
    """What a stand-in holds, by identity (to notice real code changing it)."""
    if isinstance(value, list):
        return tuple(map(id, value))
    return tuple((k, id(v)) for k, v in value.items())


_FILLING = object()  # what a stand-in holds while it is being filled


def _fill(frame: "Frame", entry: list) -> None:
    var, stand_in, filled = entry
    if filled is _FILLING:  # being filled further up (a container that holds itself)
        return
    if filled is not None and _contents(stand_in) != filled:
        frame.fail(f"real code of an object built in captured code changed a {type(stand_in).__name__} "
                   "it was handed")
    entry[2] = _FILLING
    if isinstance(var, ListVar):
        stand_in[:] = [to_shadow(frame, v) for v in var.items]
    else:
        if any(isinstance(k, Identity) for k in var.items):
            frame.fail("a dict keyed by tensors or objects handed to an object built in captured code")
        values = {k: to_shadow(frame, v) for k, v in var.items.items()}
        stand_in.clear()
        stand_in.update(values)
    entry[2] = _contents(stand_in)


def _refresh(frame: "Frame") -> None:
    """Bring every stand-in up to date before real code reads it."""
    for entry in list(frame.state.stand_ins.values()):
        _fill(frame, entry)


def _check_stand_ins(frame: "Frame") -> None:
    """After real code ran: it must not have changed a container it was handed."""
    for _, stand_in, filled in frame.state.stand_ins.values():
        if filled is not None and filled is not _FILLING and _contents(stand_in) != filled:
            frame.fail(f"real code of an object built in captured code changed a {type(stand_in).__name__} "
                       "it was handed")


def _run_real(frame: "Frame", what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on shadows, over fake tensors; what it raises breaks the graph (Python
    raises it when it runs the instruction)."""
    _refresh(frame)
    try:
        with frame.state.graph.fake_mode:
            result = fn(*args)
    except Unsupported:
        raise
    except Exception as exc:
        frame.fail(f"{what} raised {type(exc).__name__}: {exc}")
    _check_stand_ins(frame)
    return result


def from_shadow(frame: "Frame", value: Any, root: ObjectVar | None = None, path: Path | None = None) -> Var:
    """The Var for ``value``, read from a shadow: ``root`` and ``path`` say where it lives (for a
    value the object's own code made)."""
    if isinstance(value, torch.Tensor):
        var = frame.state.graph.var_of_fake(value)
        if var is None:
            frame.fail("an object built in captured code made a new tensor")
        return var
    known = frame.state.shadows.get(id(value))
    if known is not None:
        return known
    if isinstance(value, _BY_VALUE):
        return ConstVar(value)
    if type(value) is tuple or (isinstance(value, tuple) and hasattr(type(value), "_fields")):
        return TupleVar([from_shadow(frame, v, root, _extend(path, "item", i)) for i, v in enumerate(value)],
                        tuple_type=type(value))
    if root is None:
        frame.fail(f"a {type(value).__name__} made by real code of an object built in captured code")
    part = ShadowVar(root, path, value)
    frame.state.shadows[id(value)] = part  # the same object read twice is one Var
    return part


def construct(frame: "Frame", cls: type, args: list[Var], kwargs: dict[str, Var]) -> ObjectVar:
    real_args = [to_shadow(frame, a) for a in args]
    real_kwargs = {k: to_shadow(frame, v) for k, v in kwargs.items()}
    shadow = _run_real(frame, f"constructing {cls.__name__}", lambda: cls(*real_args, **real_kwargs))
    var = ObjectVar(shadow, cls, list(args), dict(kwargs))
    frame.state.shadows[id(shadow)] = var
    return var


def mutate(frame: "Frame", var: ShadowVar, fn: Callable[..., Any], args: list[Var], what: str) -> Any:
    """Apply ``fn(var's value, *args)`` to the shadow for real and log it for the rebuild; its
    result, as a real value."""
    root = var.root
    if var.path is None:
        frame.fail(f"{what}: a {type(var.value).__name__} of unknown origin inside an object built in captured code")
    step = fn if not var.path else AtPath(var.path, fn)
    frame.state.remember(root)
    real_args = [to_shadow(frame, a) for a in args]
    try:
        result = _run_real(frame, what, step, root.shadow, *real_args)
    except Unsupported:
        root.diverged = True  # it may have changed half-way
        raise
    root.mutations.append((step, list(args)))
    return result


# -- protocols -----------------------------------------------------------------------------
@handles_attr(ShadowVar)
def load_attr(frame: "Frame", obj: ShadowVar, name: str) -> Var:
    value = obj.value
    own = getattr(value, "__dict__", None)
    static = inspect.getattr_static(type(value), name, None)
    if isinstance(own, dict) and name in own and not read_through_descriptor(static):
        return from_shadow(frame, own[name], obj.root, _extend(obj.path, "attr", name))
    if name == "__dict__":
        frame.fail(f"reading __dict__ of a {type(value).__name__} built in captured code")
    member = class_member(frame, obj, type(value), name, static)
    if member is not None:
        return member
    if isinstance(static, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return ShadowMethod(obj, static, name)
    _refresh(frame)
    try:
        with frame.state.graph.fake_mode:
            attr = getattr(value, name)
    except AttributeError:
        throw(AttributeError(f"{type(value).__name__!r} object has no attribute {name!r}"))
    except Exception as exc:
        frame.fail(f"reading {name!r} of a {type(value).__name__} built in captured code raised "
                   f"{type(exc).__name__}: {exc}")
    if isinstance(attr, (types.BuiltinMethodType, types.MethodWrapperType, types.MethodType)):
        frame.fail(f"method {name!r} of a {type(value).__name__} built in captured code")
    return from_shadow(frame, attr, obj.root, _extend(obj.path, "attr", name))


@handles_store(ShadowVar)
def store_attr(frame: "Frame", obj: ShadowVar, name: str, value: Any, default: bool = False) -> None:
    """``obj.name = value`` or ``del obj.name``: the class's own hook runs (``default``: Python's
    own ``object.__setattr__``, what a custom hook ends in)."""
    if value is DELETED:
        mutate(frame, obj, object.__delattr__ if default else delattr, [ConstVar(name)], f"del .{name}")
    else:
        mutate(frame, obj, object.__setattr__ if default else setattr, [ConstVar(name), value], f".{name} = ...")


def getitem(frame: "Frame", obj: ShadowVar, index: Var) -> Var:
    result = call_dunder(frame, obj, "__getitem__", [index])
    if result is not None:
        return result
    key = _key(frame, index)
    value = _run_real(frame, "indexing", operator.getitem, obj.value, key)
    if isinstance(key, slice) and isinstance(value, list):  # a new list of the same items
        positions = range(*key.indices(len(obj.value)))
        return ListVar([from_shadow(frame, v, obj.root, _extend(obj.path, "item", i))
                        for i, v in zip(positions, value)])
    return from_shadow(frame, value, obj.root, _extend(obj.path, "item", key))


def setitem(frame: "Frame", obj: ShadowVar, index: Var, value: Var) -> None:
    mutate(frame, obj, operator.setitem, [ConstVar(_key(frame, index)), value], "item assignment")


def delitem(frame: "Frame", obj: ShadowVar, index: Var) -> None:
    mutate(frame, obj, operator.delitem, [ConstVar(_key(frame, index))], "item deletion")


def contains(frame: "Frame", obj: ShadowVar, item: Var) -> bool:
    if isinstance(item, TensorVar):
        frame.fail("`in` test of a tensor compares tensor data")
    return bool(_run_real(frame, "`in`", operator.contains, obj.value, to_shadow(frame, item)))


def _key(frame: "Frame", index: Var) -> Any:
    from .constants import as_const

    return as_const(frame, index, "an index")


#: builtin methods that only read (their results are mapped back), and those that mutate (logged)
_READS = {"keys", "values", "items", "get", "__getitem__", "__contains__", "__len__", "index", "count"}
_WRITES = {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "update", "setdefault",
           "popitem", "move_to_end", "add", "discard", "__setitem__", "__delitem__", "__setattr__",
           "__delattr__", "__iadd__", "__imul__"}


@handles_call(ShadowMethod)
def call_method(frame: "Frame", method: ShadowMethod, args: list[Var], kwargs: dict[str, Var]) -> Var:
    owner, name = method.owner, method.name
    what = f"{type(owner.value).__name__}.{name}()"
    if kwargs:
        frame.fail(f"{what} with keyword arguments on an object built in captured code")
    if name in _WRITES:
        return from_shadow(frame, mutate(frame, owner, method.descriptor, args, what))
    if name not in _READS:
        frame.fail(f"{what} on an object built in captured code")
    real_args = [to_shadow(frame, a) for a in args]
    result = _run_real(frame, what, method.descriptor, owner.value, *real_args)
    if name in ("keys", "values", "items"):
        return DictViewVar(owner, name)
    if name in ("get", "__getitem__"):
        return from_shadow(frame, result, owner.root, _extend(owner.path, "item", real_args[0]))
    return from_shadow(frame, result)


def mapping_items(frame: "Frame", var: ShadowVar) -> list[tuple[Any, Var]]:
    """The (key, value) pairs of a dict-like shadow value, as they are now."""
    pairs = _run_real(frame, "reading items", lambda m: list(dict.items(m)) if isinstance(m, dict) else list(m.items()),
                      var.value)
    return [(k, from_shadow(frame, v, var.root, _extend(var.path, "item", k))) for k, v in pairs]


@handles_iter(ShadowVar)
def _iterate(frame: "Frame", var: ShadowVar) -> list[Var]:
    """A dataclass built over fake tensors (a ModelOutput): its Python ``__iter__``, or the shadow's items."""
    result = call_dunder(frame, var, "__iter__", [])
    if result is not None:
        return iterate(frame, result)
    items = _run_real(frame, "iteration", list, var.value)
    indexed = isinstance(var.value, (list, tuple))
    return [from_shadow(frame, item, var.root, _extend(var.path, "item", i) if indexed else None)
            for i, item in enumerate(items)]


@handles_len(ShadowVar)
def _len(frame: "Frame", var: ShadowVar) -> Var:
    result = call_dunder(frame, var, "__len__", [])
    return result if result is not None else ConstVar(_run_real(frame, "len()", len, var.value))


@handles_truth(ShadowVar)
def _truth(frame: "Frame", var: ShadowVar) -> bool:
    return bool(_run_real(frame, "truth", bool, var.value))


def super_method(frame: "Frame", owner: ShadowVar, attr: Any) -> Var:
    """``super().name`` resolved to a builtin descriptor (``OrderedDict.__setitem__``)."""
    return ShadowMethod(owner, attr, attr.__name__)


# -- rebuilding after the graph -------------------------------------------------------------
def _replay(obj: Any, *steps: tuple) -> Any:
    for step, *args in steps:
        step(obj, *args)
    return obj


def visit_parts(var: ShadowVar) -> list[Var]:
    """The Vars a rebuild of ``var`` refers to (for OutputBuilder.share)."""
    if var is not var.root:
        return [var.root]
    root: ObjectVar = var  # type: ignore[assignment]
    return [*root.args, *root.kwargs.values(), *(a for _, args in root.mutations for a in args)]


def rebuild_expr(out: "OutputBuilder", var: ShadowVar) -> str:
    if var is not var.root:
        return _part_expr(out, var)
    root: ObjectVar = var  # type: ignore[assignment]
    if root.rebuilding:
        raise Unsupported(f"returning a {root.cls.__name__} that refers to itself is not supported yet")
    root.rebuilding = True
    try:
        args = [out.expr(a) for a in root.args] + [f"{k}={out.expr(v)}" for k, v in root.kwargs.items()]
        made = f"{out.consts.name(root.cls, 'cls')}({', '.join(args)})"
        if not root.mutations:
            return made
        steps = "".join(f", ({out.consts.name(step, 'step')}, {''.join(out.expr(a) + ', ' for a in args)})"
                        for step, args in root.mutations)
        return f"{out.consts.name(_replay, 'replay')}({made}{steps})"
    finally:
        root.rebuilding = False


def _part_expr(out: "OutputBuilder", var: ShadowVar) -> str:
    """A value inside a rebuilt object, found by its path (which must still lead to it)."""
    root = var.root
    if var.path is None or root.diverged or _follow(root.shadow, var.path) is not var.value:
        raise Unsupported(f"a {type(var.value).__name__} inside a {root.cls.__name__} built in captured code "
                          "escapes it where the rebuilt object would not hold it")
    return f"{out.consts.name(AtPath(var.path), 'at')}({out.expr(root)})"


def _follow(obj: Any, path: Path) -> Any:
    try:
        return AtPath(path)(obj)
    except Exception:
        return None
