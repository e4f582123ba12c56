"""The reads of guards in C++ (``SourceWalk``, ember.guard_writer) accept exactly the calls the
Python reads accept, and return the same values: on every kind of source, every kind of check it
takes over, reads that raise, and a compiled model whose modules change between calls."""
from __future__ import annotations

import copy
import weakref

import pytest
import torch

import ember
from ember import native_guards
from ember.capture.sources import (AttrSource, DictEntrySource, ItemSource, LocalSource, MethodCallSource,
                                   cell_source, constant_source, global_source)
from ember.guards import GuardSet
from core_helpers import CountingBackend, no_fallback

G = {"scale": 2.0, "table": {"a": 1}}


class _Obj:
    def __init__(self) -> None:
        self.size = (1, 2)
        self.rate = 0.5
        self.name = "x"
        self.items = [1, 2, 3]
        self.table = {"a": 1, "b": 2}
        self.child = None
        self._modules = {"lin": torch.nn.Linear(2, 2)}


class _Other(_Obj):
    pass


class _Raises(_Obj):
    @property
    def rate(self) -> float:
        raise RuntimeError("no rate")

    @rate.setter
    def rate(self, value: float) -> None:
        pass


def _cell(value: object):
    def f() -> object:
        return value
    return f.__closure__[0]


def _guard_set(obj: _Obj, friend: object, cell) -> tuple[GuardSet, list]:
    guards = GuardSet()
    o = LocalSource("o")
    guards.type_match(o, obj)
    guards.constant_tuple(AttrSource(o, "size"), obj.size)
    guards.equals(AttrSource(o, "rate"), obj.rate)
    guards.equals(AttrSource(o, "name"), obj.name)
    guards.equals(AttrSource(o, "child"), obj.child)
    guards.length(AttrSource(o, "items"), obj.items)
    guards.dict_keys(AttrSource(o, "table"), obj.table)
    lin = DictEntrySource(o, "_modules", "lin")
    guards.type_match(lin, obj._modules["lin"])
    weight = DictEntrySource(lin, "_parameters", "weight")
    guards.tensor(weight, obj._modules["lin"].weight)
    guards.equals(ItemSource(AttrSource(o, "items"), 1), obj.items[1])
    guards.identity(LocalSource("friend"), friend)
    guards.identity(LocalSource("number"), 12345678901)  # not weakly referenceable
    scale = global_source(G, "scale")
    guards.equals(scale, G["scale"])
    guards.dict_keys(global_source(G, "table"), G["table"])
    guards.equals(AttrSource(cell_source(cell, "c"), "rate"), cell.cell_contents.rate)
    guards.type_match(constant_source(torch.nn), torch.nn)
    got = MethodCallSource(AttrSource(o, "table"), dict.get, ("a",), "get")  # Python only
    guards.equals(got, obj.table.get("a"))
    guards.same_object(LocalSource("friend"), LocalSource("friend2"))  # Python only
    inputs = [weight, LocalSource("friend"), got]
    return guards, inputs


def _locals(obj: _Obj, friend: object) -> dict:
    return {"o": obj, "friend": friend, "friend2": friend, "number": 12345678901}


def _mutations() -> dict[str, object]:
    """name -> a function of (obj, L, cell) that changes one thing the guard checks (or not)."""
    def setter(attr, value):
        return lambda o, L, c: setattr(o, attr, value)

    def other_friend(o, L, c):
        L["friend"] = L["friend2"] = _Obj()

    def retype(o, L, c):
        o.__class__ = _Other

    def raising(o, L, c):
        o.__class__ = _Raises

    return {
        "nothing": lambda o, L, c: None,
        "size equal, new tuple": setter("size", (1, 2 + 0 * len("x"))),
        "size of floats": setter("size", (1.0, 2.0)),
        "size longer": setter("size", (1, 2, 3)),
        "size a list": setter("size", [1, 2]),
        "rate changed": setter("rate", 0.25),
        "rate an int": setter("rate", 1),
        "rate nan": setter("rate", float("nan")),
        "name changed": setter("name", "y"),
        "child set": setter("child", 0),
        "items longer": lambda o, L, c: o.items.append(4),
        "items a tuple": setter("items", (1, 2, 3)),
        "item changed": lambda o, L, c: o.items.__setitem__(1, 5),
        "table key added": lambda o, L, c: o.table.__setitem__("c", 3),
        "table keys reordered": setter("table", {"b": 2, "a": 1}),
        "table value changed": lambda o, L, c: o.table.__setitem__("a", 9),
        "attribute deleted": lambda o, L, c: delattr(o, "name"),
        "property raises": raising,
        "class reassigned": retype,
        "module replaced": lambda o, L, c: o._modules.__setitem__("lin", torch.nn.Identity()),
        "weight resized": lambda o, L, c: setattr(o._modules["lin"], "weight", torch.nn.Parameter(torch.ones(3, 2))),
        "weight deleted": lambda o, L, c: o._modules["lin"]._parameters.pop("weight"),
        "other friend": other_friend,
        "friends differ": lambda o, L, c: L.__setitem__("friend2", _Obj()),
        "number differs": lambda o, L, c: L.__setitem__("number", 12345678901 + 0 * len("x") + 1),
        "local missing": lambda o, L, c: L.pop("o"),
        "global changed": lambda o, L, c: G.__setitem__("scale", 3.0),
        "global deleted": lambda o, L, c: G.pop("scale"),
        "global table grew": lambda o, L, c: G["table"].__setitem__("z", 0),
        "cell changed": lambda o, L, c: setattr(c, "cell_contents", _Raises()),
        "class gains a property": lambda o, L, c: setattr(type(o), "rate", property(lambda self: 0.75)),
        "class gains an equal attribute": lambda o, L, c: setattr(type(o), "name", "x"),
        "instance dict replaced": lambda o, L, c: setattr(o, "__dict__", dict(o.__dict__, rate=0.125)),
        "instance dict equal copy": lambda o, L, c: setattr(o, "__dict__", dict(o.__dict__)),
        "module dict entry replaced": lambda o, L, c: o._modules["lin"].__dict__.__setitem__(
            "_parameters", {"weight": torch.nn.Parameter(torch.ones(3, 2))}),
    }


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("mutation", list(_mutations()))
def test_walk_and_python_reads_agree(native, monkeypatch, mutation, warm) -> None:
    """Each mutation applied to fresh objects; the guard written with the walk and the guard
    written without it (Python reads, C++ tensor check) return the same: None, or the same
    input values. ``warm``: the walk ran on the objects before the mutation, so it remembers
    its reads (read_memo.h) and must notice what changed."""
    assert native_guards.source_walk() is not None
    friend = _Obj()
    cell = _cell(_Obj())
    obj = _Obj()
    guards, inputs = _guard_set(obj, friend, cell)
    walked = guards.compile(inputs)[0]
    monkeypatch.setattr(native_guards, "source_walk", lambda: None)
    plain = guards.compile(inputs)[0]
    assert "___walk" in walked.__ember_source__ and "___walk" not in plain.__ember_source__
    assert "_modules['lin']" not in walked.__ember_source__.replace("#", "\n#").split("#")[0]  # read in C++
    saved = copy.deepcopy(G)
    saved_class = {k: v for k, v in vars(_Obj).items() if k in ("rate", "name")}
    try:
        L = _locals(obj, friend)
        if warm:
            for _ in range(2):
                assert walked(L) is not None
        _mutations()[mutation](obj, L, cell)
        got_walked, again, got_plain = walked(L), walked(L), plain(L)  # again: after what it learnt
    finally:
        G.clear()
        G.update(saved)
        for name in ("rate", "name"):
            if name in vars(_Obj):
                delattr(_Obj, name)
        for name, value in saved_class.items():
            setattr(_Obj, name, value)
    assert (got_walked is None) == (again is None) == (got_plain is None), (mutation, got_walked, again, got_plain)
    if mutation == "nothing":
        assert got_walked is not None
    if got_walked is not None:
        assert len(got_walked) == len(got_plain) and all(a is b for a, b in zip(got_walked, got_plain))
    if mutation not in ("nothing", "size equal, new tuple", "table value changed", "weight deleted",
                        "class gains an equal attribute", "instance dict equal copy"):
        assert got_walked is None, mutation  # the mutation changed something the guard checks


def test_walk_rejects_malformed_programs(native) -> None:
    walk = native_guards.source_walk()
    for steps, groups in [(((1, 5, "x"),), ()), (((3, 0, 9, int),), ()), (((1, 0, 3),), ()),
                          (((2, 0, "o"),), ((7,),)), (((3, 0, 0, 3),), ())]:
        with pytest.raises(ValueError):
            walk(steps, groups)
    ok = walk(((2, 0, "o"), (3, 1, 0, int), (0, weakref)), ((1, 2),))
    assert ok({"o": 3}) == (({"o": 3}, 3, weakref), (3, weakref))
    assert ok({"o": 3.0}) is None and ok({}) is None and ok.steps == 3


def test_compiled_model_recompiles_when_its_modules_change(native) -> None:
    """A model compiled with the walk: a changed padding, a module swapped for another type, a
    bias added and a class reassigned each recompile, and every call matches eager."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4),
                                torch.nn.ReLU()).eval()
    backend = CountingBackend()
    compiled = ember.compile(model, backend=backend)
    x = torch.randn(2, 3, 8, 8)
    changes = [lambda: None,
               lambda: setattr(model[0], "padding", (2, 2)),
               lambda: model.__setitem__(2, torch.nn.Sigmoid()),
               lambda: setattr(model[0], "bias", torch.nn.Parameter(torch.randn(4))),
               lambda: setattr(model[1], "__class__", torch.nn.InstanceNorm2d)]
    with no_fallback(), torch.no_grad():
        for k, change in enumerate(changes):
            change()
            torch.testing.assert_close(compiled(x), model(x))
            torch.testing.assert_close(compiled(x), model(x))  # the new entry's guard accepts it
            assert backend.count == k + 1, k
    state = compiled.__dict__["_ember_call"].__ember__
    assert all("___walk" in e.guard.__ember_source__ for e in state.entries)


class _Elsewhere:
    pass


class _OwnMro(type):
    def mro(cls):
        return [cls, _Elsewhere, object]


def test_walk_does_not_remember_reads_through_a_metaclass_mro(native) -> None:
    """A metaclass's own ``mro()`` can put a class into the MRO whose changes do not invalidate
    the type's version tag: such reads are done on every call (a property added to that class
    later makes the attribute read differently)."""
    class Odd(metaclass=_OwnMro):
        pass
    obj = Odd()
    obj.x = 1
    guards = GuardSet()
    guards.equals(AttrSource(LocalSource("o"), "x"), 1)
    guard = guards.compile()[0]
    L = {"o": obj}
    assert "___walk" in guard.__ember_source__
    for _ in range(3):
        assert guard(L) is not None
    try:
        _Elsewhere.x = property(lambda self: 2)
        for i in range(20000):  # ordinary lookups evict CPython's own cached lookup
            getattr(type(f"T{i}", (), {"x": i})(), "x")
        assert obj.x == 2 and guard(L) is None
    finally:
        del _Elsewhere.x


def test_a_cycle_through_a_guard_is_collected(native) -> None:
    """The walk holds the objects it reads from (a cell, a fixed object); a model whose guard
    refers back to it is still garbage-collected."""
    import gc

    class Model:
        pass

    def make() -> weakref.ref:
        m = Model()
        m.x = 1
        guards = GuardSet()
        guards.equals(AttrSource(constant_source(m), "x"), 1)
        m.guard = guards.compile()[0]
        assert m.guard({}) is not None and "___walk" in m.guard.__ember_source__
        return weakref.ref(m)
    ref = make()
    gc.collect()
    assert ref() is None


def test_an_interrupt_in_a_read_is_not_taken_for_a_failed_check(native) -> None:
    """A read that raises KeyboardInterrupt propagates it, as the Python guard's ``except
    Exception`` does; an ordinary exception is a failed check."""
    class Reads:
        @property
        def x(self) -> int:
            raise self.error
    guards = GuardSet()
    guards.equals(AttrSource(LocalSource("o"), "x"), 1)
    guard = guards.compile()[0]
    obj = Reads()
    obj.error = RuntimeError("no")
    assert guard({"o": obj}) is None
    obj.error = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        guard({"o": obj})
