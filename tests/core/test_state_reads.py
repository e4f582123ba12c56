"""Every value capture reads is guarded: state read while capturing that changes later (a
function's defaults, an environment variable, a Python attribute of a tensor, a library's flag,
a class's method, a function's code) gives a new capture, never the old result (issue 45,
item 3). Each case runs compiled and eager, changes the state, and runs both again."""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback

FLAG = "EMBER_TEST_STATE_FLAG"


def _helper_with_tensor_default(x, y=torch.zeros(2)):
    y.add_(1)  # mutates the default: eager mutates the one the function has now
    return x + y


def _helper_with_default(x, k=2):
    return x * k


def _helper_with_kwdefault(x, *, k=2):
    return x * k


def _helper_with_list_default(x, acc=[]):  # noqa: B006 - the shared default is the point
    acc.append(1)
    return x * len(acc)


def _replace_defaults(fn: Callable, defaults: tuple) -> Callable[[], None]:
    def change() -> None:
        fn.__defaults__ = defaults
    return change


def _run(fn: Callable, change: Callable[[], None], args: Callable[[], tuple], undo: Callable[[], None] | None = None,
         recompiles: bool = True) -> None:
    """fn compiled and eager agree before and after ``change``; the change recompiles."""
    backend = CountingBackend()
    compiled = ember.compile(fn, backend=backend)
    try:
        with no_fallback():
            torch.testing.assert_close(compiled(*args()), fn(*args()))
            before = backend.count
            change()
            torch.testing.assert_close(compiled(*args()), fn(*args()))
        assert backend.count == before + (1 if recompiles else 0)
    finally:
        if undo is not None:
            undo()


def _ones():
    return (torch.ones(2),)


# -- a function's defaults ------------------------------------------------------------------
def test_tensor_default_of_an_inlined_callee_is_read_at_each_call():
    def fn(x):
        return _helper_with_tensor_default(x)

    old = _helper_with_tensor_default.__defaults__
    backend = CountingBackend()
    compiled = ember.compile(fn, backend=backend, fullgraph=True)
    try:
        old[0].zero_()
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 2.0))
        new = torch.full((2,), 10.0)
        _helper_with_tensor_default.__defaults__ = (new,)
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 12.0))
    finally:
        _helper_with_tensor_default.__defaults__ = old
    assert new.tolist() == [11.0, 11.0] and old[0].tolist() == [1.0, 1.0]  # each call mutated its default
    assert backend.count == 1  # the default is a graph input, read at each call


def test_replaced_default_of_an_inlined_callee():
    def fn(x):
        return _helper_with_default(x)

    _run(fn, _replace_defaults(_helper_with_default, (5,)), _ones, undo=_replace_defaults(_helper_with_default, (2,)))


def test_replaced_kwdefault_of_an_inlined_callee():
    def fn(x):
        return _helper_with_kwdefault(x) + 1

    def change():
        _helper_with_kwdefault.__kwdefaults__ = {"k": 7}

    def undo():
        _helper_with_kwdefault.__kwdefaults__ = {"k": 2}

    _run(fn, change, _ones, undo=undo)


def test_mutable_default_is_the_one_list():
    def fn(x):
        return _helper_with_list_default(x)

    _helper_with_list_default.__defaults__[0].clear()
    compiled = ember.compile(fn, backend="eager", fullgraph=True)
    results = [compiled(torch.ones(1)).item() for _ in range(3)]
    assert results == [1.0, 2.0, 3.0]
    assert len(_helper_with_list_default.__defaults__[0]) == 3


def test_defaults_of_the_compiled_function_itself():
    def fn(x, y=torch.ones(2), *, k=2):
        return x * k + y

    compiled = ember.compile(fn, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(torch.ones(2)), fn(torch.ones(2)))
    fn.__defaults__ = (torch.zeros(2),)
    fn.__kwdefaults__ = {"k": 10}
    torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 10.0))


def test_replaced_default_of_a_method():
    class Scaler:
        def scale(self, x, k=2):
            return x * k

    obj = Scaler()

    def fn(x):
        return obj.scale(x)

    _run(fn, _replace_defaults(Scaler.scale, (9,)), _ones)


# -- the environment ------------------------------------------------------------------------
ENV_READS = {  # reads of one variable: guarded on that variable alone
    "get": lambda x: x + 1 if os.environ.get(FLAG) == "1" else x - 1,
    "get_default": lambda x: x + 1 if os.environ.get(FLAG, "0") == "1" else x - 1,
    "getitem": lambda x: x + 1 if FLAG in os.environ and os.environ[FLAG] == "1" else x - 1,
    "contains": lambda x: x + 1 if FLAG in os.environ else x - 1,
    "getenv": lambda x: x + 1 if os.getenv(FLAG) == "1" else x - 1,
    "from_import": lambda x: x + 1 if _environ.get(FLAG) == "1" else x - 1,
}
_environ = os.environ


@pytest.mark.parametrize("read", list(ENV_READS), ids=list(ENV_READS))
def test_environment_variable_read_while_capturing(read, monkeypatch):
    monkeypatch.delenv(FLAG, raising=False)
    monkeypatch.delenv(FLAG + "_OTHER", raising=False)
    fn = ENV_READS[read]
    backend = CountingBackend()
    compiled = ember.compile(fn, backend=backend, fullgraph=True)
    torch.testing.assert_close(compiled(torch.ones(2)), fn(torch.ones(2)))
    monkeypatch.setenv(FLAG + "_OTHER", "1")  # another variable: the entry still applies
    torch.testing.assert_close(compiled(torch.ones(2)), fn(torch.ones(2)))
    assert backend.count == 1
    monkeypatch.setenv(FLAG, "1")
    torch.testing.assert_close(compiled(torch.ones(2)), fn(torch.ones(2)))
    assert backend.count == 2


def test_whole_environment_read_while_capturing(monkeypatch):
    def fn(x):
        return x + len(os.environ) + (1 if FLAG in os.environ.keys() else 0) + len(dict(os.environ))

    monkeypatch.delenv(FLAG, raising=False)
    _run(fn, lambda: monkeypatch.setenv(FLAG, "1"), _ones)


def test_environment_read_then_written(monkeypatch):
    def fn(x):
        seen = os.environ.get(FLAG)
        os.environ[FLAG] = "written"  # a write: run in Python at a graph break
        return x + 1 if seen == "1" else x - 1

    monkeypatch.delenv(FLAG, raising=False)
    compiled = ember.compile(fn, backend="eager")
    torch.testing.assert_close(compiled(torch.ones(1)), torch.zeros(1))
    assert os.environ[FLAG] == "written"
    monkeypatch.setenv(FLAG, "1")
    torch.testing.assert_close(compiled(torch.ones(1)), torch.full((1,), 2.0))
    assert os.environ[FLAG] == "written"


# -- Python attributes of tensors -----------------------------------------------------------
def _tagged(value: Any) -> torch.Tensor:
    t = torch.ones(2)
    t.tag = value
    return t


TENSOR_READS = {
    "hasattr": lambda x: x + 1 if hasattr(x, "tag") else x - 1,
    "getattr_default": lambda x: x + getattr(x, "tag", 5),
    "attribute": lambda x: x * x.tag,
}


@pytest.mark.parametrize("read", list(TENSOR_READS), ids=list(TENSOR_READS))
def test_python_attribute_of_a_tensor(read):
    fn = TENSOR_READS[read]
    first, second = (_tagged(2), _tagged(3)) if read == "attribute" else (torch.ones(2), _tagged(3))
    backend = CountingBackend()
    compiled = ember.compile(fn, backend=backend, fullgraph=True)
    with no_fallback():
        torch.testing.assert_close(compiled(first), fn(first))
        torch.testing.assert_close(compiled(second), fn(second))
    assert backend.count == 2


def test_attributes_of_fake_tensors_are_not_seen():
    def fn(x):
        return x + 1 if hasattr(x, "fake_mode") or hasattr(x, "constant") else x - 1

    torch.testing.assert_close(ember.compile(fn, backend="eager", fullgraph=True)(torch.ones(2)), torch.zeros(2))


# -- flags of libraries, torch's global state ------------------------------------------------
def _set_attr(obj: Any, name: str, value: Any) -> Callable[[], None]:
    return lambda: setattr(obj, name, value)


def test_flag_of_a_torch_backend_module():
    def fn(x):
        return x + 1 if torch.backends.mkldnn.enabled else x - 1

    _run(fn, _set_attr(torch.backends.mkldnn, "enabled", False), _ones,
         undo=_set_attr(torch.backends.mkldnn, "enabled", torch.backends.mkldnn.enabled))


def test_flag_of_a_torch_backend_object():
    def fn(x):
        return x + 1 if torch.backends.cuda.matmul.allow_tf32 else x - 1

    before = torch.backends.cuda.matmul.allow_tf32
    _run(fn, _set_attr(torch.backends.cuda.matmul, "allow_tf32", not before), _ones,
         undo=_set_attr(torch.backends.cuda.matmul, "allow_tf32", before))


def test_list_of_a_library_module():
    def fn(x):
        return x + 1 if "--ember-test" in sys.argv else x - 1

    _run(fn, lambda: sys.argv.append("--ember-test"), _ones, undo=lambda: sys.argv.remove("--ember-test"))


def test_default_dtype_query():
    def fn(x):
        return x + (1 if torch.get_default_dtype() == torch.float64 else 2)

    _run(fn, lambda: torch.set_default_dtype(torch.float64), lambda: (torch.ones(2, dtype=torch.float32),),
         undo=lambda: torch.set_default_dtype(torch.float32))


def test_number_of_threads_query():
    threads = torch.get_num_threads()

    def fn(x):
        return x * torch.get_num_threads()

    _run(fn, lambda: torch.set_num_threads(max(1, threads - 1) if threads > 1 else 2), _ones,
         undo=lambda: torch.set_num_threads(threads))


# -- classes and functions patched after compiling -------------------------------------------
def test_method_replaced_on_its_class():
    class Block(torch.nn.Module):
        def forward(self, x):
            return x + 1

    block = Block()
    _run(lambda x: block(x) * 2, _set_attr(Block, "forward", lambda self, x: x + 100), _ones)


def test_property_replaced_on_its_class():
    class Config:
        @property
        def scale(self):
            return 2

    config = Config()
    _run(lambda x: x * config.scale, _set_attr(Config, "scale", property(lambda self: 3)), _ones)


def _callee(x):
    return x + 1


def test_code_of_a_callee_replaced():
    _run(lambda x: _callee(x) * 2, _set_attr(_callee, "__code__", (lambda x: x + 50).__code__), _ones,
         undo=_set_attr(_callee, "__code__", _callee.__code__))
