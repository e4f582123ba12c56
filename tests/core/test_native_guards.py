"""The C++ tensor check of guards (ember.native_guards) accepts exactly what the Python check
accepts, replaces the Python checks in generated guards, and leaves them in place when it cannot
be built."""
from __future__ import annotations

import logging
import os

import pytest
import torch

import ember
import ember.capture.sources
from ember import config, native_guards
from ember.capture.sources import LocalSource
from ember.guards import GuardSet
from core_helpers import CountingBackend, no_fallback



class Tagged(torch.Tensor):
    """A tensor subclass: its checks stay in Python, but TensorMatch must still be exact on it."""


def _tensors() -> dict[str, object]:
    base = torch.randn(4, 6)
    param = torch.nn.Parameter(torch.randn(4, 6))
    return {
        "contiguous": base,
        "another contiguous": torch.randn(4, 6),
        "transposed": torch.randn(6, 4).t(),
        "sliced": torch.randn(4, 12)[:, ::2],
        "expanded": torch.randn(4, 1).expand(4, 6),
        "other shape": torch.randn(6, 4),
        "scalar": torch.tensor(3.0),
        "empty": torch.empty(0, 6),
        "int64": torch.zeros(4, 6, dtype=torch.int64),
        "bool": torch.zeros(4, 6, dtype=torch.bool),
        "bfloat16": torch.randn(4, 6, dtype=torch.bfloat16),
        "float16": torch.randn(4, 6, dtype=torch.float16),
        "requires grad": torch.randn(4, 6, requires_grad=True),
        "parameter": param,
        "frozen parameter": torch.nn.Parameter(torch.randn(4, 6), requires_grad=False),
        "detached parameter": param.detach(),
        "meta": torch.empty(4, 6, device="meta"),
        "sparse": torch.randn(4, 6).to_sparse(),
        "subclass": base.as_subclass(Tagged),
        "int": 3,
        "list": [base],
        "none": None,
    }


def _metadata(value: object) -> tuple | None:
    if not isinstance(value, torch.Tensor) or value.is_sparse:
        return None
    return (type(value), value.dtype, value.device, value.shape, value.stride(), value.requires_grad)


def _accepts(spec_tensor: torch.Tensor, value: object, native: bool, monkeypatch) -> bool:
    monkeypatch.setattr(config, "native_guards", native)
    guards = GuardSet()
    guards.tensor(LocalSource("x"), spec_tensor)
    guard, _ = guards.compile()
    return guard({"x": value}) is not None


def test_native_and_python_checks_accept_the_same_tensors(native, monkeypatch) -> None:
    corpus = _tensors()
    specs = {name: t for name, t in corpus.items() if isinstance(t, torch.Tensor) and not t.is_sparse}
    for spec_name, spec_tensor in specs.items():
        for name, value in corpus.items():
            python = _accepts(spec_tensor, value, False, monkeypatch)
            native = _accepts(spec_tensor, value, True, monkeypatch)
            assert python == native, (spec_name, name, python)
            assert python == (_metadata(value) == _metadata(spec_tensor)), (spec_name, name)


def test_tensor_match_checks_any_tensor_type_exactly(native) -> None:
    corpus = _tensors()
    TensorMatch = native
    for name, t in corpus.items():
        if not isinstance(t, torch.Tensor) or t.is_sparse:
            continue
        match = TensorMatch(((type(t), t.dtype, t.device, tuple(t.shape), tuple(t.stride()), t.requires_grad),))
        assert match.count == 1
        assert match((t,)) is True, name
        for other, v in corpus.items():
            assert match((v,)) is (_metadata(v) == _metadata(t)), (name, other)
    with pytest.raises(ValueError, match="one tensor per spec"):
        match(())
    with pytest.raises(TypeError, match="torch.Tensor type"):
        TensorMatch(((int, torch.float32, torch.device("cpu"), (1,), (1,), False),))


def test_guard_checks_all_plain_tensors_in_one_native_call(native) -> None:
    lin = torch.nn.Linear(6, 3)

    def run(x, y):
        return lin(x) + y

    backend = CountingBackend()
    compiled = ember.compile(run, backend=backend, dynamic=False)  # a new size recompiles
    x, y = torch.randn(4, 6), torch.randn(4, 3)
    with no_fallback():
        torch.testing.assert_close(compiled(x, y), run(x, y))
        source = compiled.__ember__.entries[0].guard.__ember_source__
        assert source.count("tensor_match") == 1 and ".stride()" not in source
        compiled(torch.randn(4, 6), torch.randn(4, 3))
        assert backend.count == 1
        for new_x, new_y in [(torch.randn(5, 6), torch.randn(5, 3)),             # shape
                             (torch.randn(6, 4).t(), y),                          # strides
                             (x, y.double()),                                     # dtype
                             (x.requires_grad_(), y)]:                            # requires_grad
            torch.testing.assert_close(compiled(new_x, new_y), run(new_x, new_y))
        assert backend.count == 5
        with torch.no_grad():
            lin.weight.data = lin.weight.data.t().contiguous().t()  # same Parameter, new strides
        torch.testing.assert_close(compiled(x, y), run(x, y))
        assert backend.count == 6
    reasons = compiled.__ember__.entries[0].reasons({"x": torch.randn(2, 6), "y": y})
    assert any("shape=(4, 6)" in r for r in reasons)


def test_failed_build_leaves_python_checks_and_says_why_once(tmp_path, monkeypatch, caplog) -> None:
    """A compiler that fails: the build runs in a detached process, leaves the compiler's
    message behind, and guards keep checking tensors in Python."""
    compiler = tmp_path / "broken-cxx"
    compiler.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo broken-cxx 1.0; exit 0; fi\n"
                        "echo 'tensor_match.cpp:1: error: no compiler here' >&2\nexit 1\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("CXX", str(compiler))
    monkeypatch.setattr(native_guards, "CXX", str(compiler))
    _fresh_state(monkeypatch, tmp_path / "native")
    try:
        assert native_guards.tensor_match() is None  # starts the build in the background
        path = native_guards.library_path()
        assert os.path.exists(path + ".building")
        assert native_guards.tensor_match() is None  # no second build
        native_guards._builder.wait(timeout=120)
        with open(path + ".failed") as f:
            assert "no compiler here" in f.read()
        assert not os.path.exists(path + ".building") and not os.path.exists(path)
        monkeypatch.setattr(native_guards, "_started", False)
        with caplog.at_level(logging.WARNING, logger="ember.guards"):
            assert native_guards.tensor_match() is None
            assert native_guards.tensor_match() is None
        warnings = [r for r in caplog.records if "C++ tensor check is unavailable" in r.getMessage()]
        assert len(warnings) == 1 and "no compiler here" in warnings[0].getMessage()

        compiled = ember.compile(lambda x: x * 2, backend="eager")
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), x * 2)
        assert ".stride() ==" in compiled.__ember__.entries[0].guard.__ember_source__
    finally:
        native_guards.library_path.cache_clear()


def test_native_guards_can_be_switched_off(monkeypatch) -> None:
    monkeypatch.setattr(config, "native_guards", False)
    assert native_guards.tensor_match() is None
    compiled = ember.compile(lambda x: x + 1, backend="eager")
    compiled(torch.randn(3))
    assert "tensor_match" not in compiled.__ember__.entries[0].guard.__ember_source__



def _fresh_state(monkeypatch, native_dir) -> None:
    monkeypatch.setenv("EMBER_NATIVE_DIR", str(native_dir))
    monkeypatch.setattr(native_guards, "_loaded", None)
    monkeypatch.setattr(native_guards, "_gave_up", False)
    monkeypatch.setattr(native_guards, "_started", False)
    native_guards.library_path.cache_clear()


def test_native_dir_is_checked_itself_not_its_parent(tmp_path, monkeypatch, caplog) -> None:
    shared = tmp_path / "shared"  # like /tmp: others may write here, but not in our folder
    shared.mkdir()
    shared.chmod(0o777)
    _fresh_state(monkeypatch, shared / "native")
    try:
        path = native_guards.library_path()
        assert os.path.dirname(path) == str(shared / "native")
        assert oct(os.stat(shared / "native").st_mode & 0o777) == "0o700"

        (shared / "open").mkdir()
        (shared / "open").chmod(0o777)
        _fresh_state(monkeypatch, shared / "open")
        with caplog.at_level(logging.WARNING, logger="ember.guards"):
            assert native_guards.ensure_built() is None  # never raises
        assert any("writable by other users" in r.getMessage() for r in caplog.records)
    finally:
        native_guards.library_path.cache_clear()


class _Dict(dict):
    """A __dict__ replacement whose lookups are its own (the check must use them, as Python does)."""

    def __contains__(self, key: object) -> bool:
        return key == "forward" or dict.__contains__(self, key)


def _modules() -> dict[str, object]:
    def plain() -> torch.nn.Module:
        return torch.nn.Linear(2, 2)
    out = {"plain": plain()}
    out["forward hook"] = plain()
    out["forward hook"].register_forward_hook(lambda m, i, o: None)
    out["pre hook"] = plain()
    out["pre hook"].register_forward_pre_hook(lambda m, i: None)
    out["backward hook"] = plain()
    out["backward hook"].register_full_backward_hook(lambda m, gi, go: None)
    out["backward pre hook"] = plain()
    out["backward pre hook"].register_full_backward_pre_hook(lambda m, go: None)
    out["own forward"] = plain()
    out["own forward"].forward = lambda x: x
    for table in ("_forward_hooks", "_backward_hooks", "_backward_pre_hooks"):
        m = plain()
        del m.__dict__[table]
        out[f"no {table}"] = m
    odd = plain()
    odd.__dict__ = _Dict(odd.__dict__)
    out["dict subclass"] = odd
    out["not a module"] = object()
    out["int"] = 3
    return out


def _module_accepted(value: object, native: bool, monkeypatch) -> bool:
    monkeypatch.setattr(config, "native_guards", native)
    guards = GuardSet()
    guards.plain_module_call(LocalSource("m"))
    guard, _ = guards.compile()
    return guard({"m": value}) is not None


def test_native_and_python_module_checks_agree(native, monkeypatch) -> None:
    """The hook check of a module called as its class's forward, in C++ with the tensors: the
    same answer as the Python check for hooks of each kind, an own ``forward``, a missing hook
    table, a ``__dict__`` with its own ``in``, and things that are not modules."""
    expected = {"plain": True, "no _backward_pre_hooks": True}
    for name, value in _modules().items():
        python = _module_accepted(value, False, monkeypatch)
        cpp = _module_accepted(value, True, monkeypatch)
        assert python == cpp == expected.get(name, False), (name, python, cpp)
    monkeypatch.setattr(config, "native_guards", True)
    guards = GuardSet()
    guards.plain_module_call(LocalSource("m"))
    source = guards.compile()[0].__ember_source__
    assert "'forward' not in" not in source and "tensor_match" in source  # checked in C++


def test_module_check_notices_changes_after_it_passed(native, monkeypatch) -> None:
    """The C++ module check remembers a module that passed (read_memo.h): a hook registered, an
    own ``forward``, a hook table deleted or replaced afterwards each fail it, as they fail the
    Python check; removing the hook makes it pass again."""
    def compiled(native_checks: bool):
        monkeypatch.setattr(config, "native_guards", native_checks)
        guards = GuardSet()
        guards.plain_module_call(LocalSource("m"))
        return guards.compile()[0]
    cpp, python = compiled(True), compiled(False)
    changes = {
        "forward hook": lambda m: m.register_forward_hook(lambda *a: None),
        "pre hook": lambda m: m.register_forward_pre_hook(lambda *a: None),
        "backward hook": lambda m: m.register_full_backward_hook(lambda *a: None),
        "backward pre hook": lambda m: m.register_full_backward_pre_hook(lambda *a: None),
        "own forward": lambda m: setattr(m, "forward", lambda x: x),
        "table deleted": lambda m: m.__dict__.pop("_forward_hooks"),
        "table replaced": lambda m: m.__dict__.__setitem__("_forward_hooks", {1: 2}),
    }
    for name, change in changes.items():
        m = torch.nn.Linear(2, 2)
        assert cpp({"m": m}) is not None and cpp({"m": m}) is not None, name
        handle = change(m)
        assert cpp({"m": m}) is None and python({"m": m}) is None, name
        if hasattr(handle, "remove"):
            handle.remove()
            assert cpp({"m": m}) is not None and python({"m": m}) is not None, name


class _Holder:
    """An object whose attribute the guard reads (plain, a property, a failing property)."""

    def __init__(self, value: object) -> None:
        self.value = value


class _Raising:
    @property
    def value(self) -> object:
        raise RuntimeError("no value today")


class _Module(torch.nn.Module):
    """``value`` set through ``Module.__setattr__`` (an instance attribute), or, as a parameter,
    read through ``Module.__getattr__``."""


class _Odd:
    """An object equal to everything, of its own type."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class _Fails:
    def __eq__(self, other: object) -> bool:
        raise ValueError("cannot compare")

    __hash__ = object.__hash__


class _Named(tuple):
    pass


_PADDING = (1, 1)


def _constant_cases() -> dict[str, tuple[object, object]]:
    """name -> (the value recorded at capture, the object read at the call)."""
    nan = float("nan")
    module = _Module()
    module.value = 0.1
    param_module = _Module()
    param_module.register_parameter("value", torch.nn.Parameter(torch.ones(1)))
    return {
        "same float": (0.1, _Holder(0.1)),
        "other float": (0.1, _Holder(0.2)),
        "int for float": (1.0, _Holder(1)),
        "bool for int": (1, _Holder(True)),
        "int": (3, _Holder(3)),
        "big int": (2 ** 70, _Holder(2 ** 70)),
        "str": ("zeros", _Holder("zeros")),
        "other str": ("zeros", _Holder("reflect")),
        "none": (None, _Holder(None)),
        "none for false": (None, _Holder(False)),
        "true": (True, _Holder(True)),
        "nan": (nan, _Holder(nan)),
        "missing": (0.1, object()),
        "raising property": (0.1, _Raising()),
        "module attribute": (0.1, module),
        "module parameter": (0.1, param_module),
        "odd equality": (_Odd(), _Holder(_Odd())),
        "failing equality": (_Fails(), _Holder(_Fails())),
        "same tuple": (_PADDING, _Holder(_PADDING)),
        "equal tuple": ((1, 1), _Holder(tuple([1, 1]))),
        "tuple of floats": ((1, 1), _Holder((1.0, 1.0))),
        "tuple with a bool": ((1, 1), _Holder((1, True))),
        "longer tuple": ((1, 1), _Holder((1, 1, 1))),
        "list": ((1, 1), _Holder([1, 1])),
        "tuple subclass": ((1, 1), _Holder(_Named((1, 1)))),
        "other tuple": ((1, 1), _Holder((2, 2))),
    }


def _constant_accepted(recorded: object, obj: object, native: bool, monkeypatch) -> tuple[bool, str]:
    monkeypatch.setattr(config, "native_guards", native)
    guards = GuardSet()
    source = ember.capture.sources.AttrSource(LocalSource("o"), "value")
    if type(recorded) is tuple:
        guards.constant_tuple(source, recorded)
    else:
        guards.equals(source, recorded)
    guard, _ = guards.compile()
    return guard({"o": obj}) is not None, guard.__ember_source__


@pytest.mark.parametrize("walk", [True, False])
def test_native_and_python_constant_attribute_checks_agree(native, monkeypatch, walk) -> None:
    """A module's constant attributes (``conv.padding == (1, 1)``, ``bn.momentum == 0.1``) are
    checked in C++: by the source walk that reads them, or (where the walk cannot read the
    attribute's object) with the tensors. The same answer as the Python check for equal and
    unequal values, values of another type (``True`` for 1, ``1`` for 1.0), NaN (its own check,
    in Python), a missing or raising attribute, a module's ``__getattr__``, user-defined and
    failing ``==``, tuples that are the same object, equal, of other item types or not tuples."""
    if not walk:
        monkeypatch.setattr(native_guards, "source_walk", lambda: None)
    expected_true = {"same float", "int", "big int", "str", "none", "true", "nan", "module attribute",
                     "odd equality", "same tuple", "equal tuple"}
    for name, (recorded, obj) in _constant_cases().items():
        python, _ = _constant_accepted(recorded, obj, False, monkeypatch)
        cpp, source = _constant_accepted(recorded, obj, True, monkeypatch)
        assert python == cpp == (name in expected_true), (name, python, cpp)
        if name in ("same float", "same tuple", "str"):
            code = "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))
            assert ".value" not in code and ("___walk" if walk else "tensor_match") in code, source  # read in C++
