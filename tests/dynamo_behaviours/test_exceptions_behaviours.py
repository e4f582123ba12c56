"""Behaviours of torch's ``test/dynamo/test_exceptions.py``, in our own programs: ``try`` / ``except`` /
``else`` / ``finally`` around tensor work inside captured code, exceptions raised by called functions,
``__getattr__`` raising AttributeError, StopIteration and KeyError handled in Python, custom
exception classes, and the ``__context__`` chains CPython builds."""
from __future__ import annotations

import contextlib

import torch

from behaviour_harness import Suite

SUITE = S = Suite("test_exceptions")


def _x(*shape):
    return torch.linspace(-1, 1, 4) if not shape else torch.linspace(-1, 1, shape[0])


class Custom(Exception):
    pass


class CustomWithArgs(Exception):
    def __init__(self, a, b=None):
        self.a = a
        self.b = b


@S.case("test_exception", (_x(),))
def raise_caught_by_exception_handler(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError
    except Exception:
        x = torch.sigmoid(x)
    return x


@S.case("test_exception2", (_x(),))
def raise_caught_by_tuple_handler(x):
    x = x * 2
    try:
        x = torch.exp(x)
        raise KeyError("k")
    except (ValueError, KeyError):
        x = torch.tanh(x)
    return x


@S.case("test_exception3", (_x(),))
def second_handler_matches_then_finally(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError("no")
    except AssertionError:
        x = x * 100
    except NotImplementedError:
        x = x - 1
    finally:
        x = torch.cos(x)
    return x


@S.case("test_exception4", (_x(),))
def raise_inside_loop_with_early_return(x):
    for i in range(8):
        if i == 4:
            return x
        try:
            x = torch.sin(x)
            raise NotImplementedError
        except Exception:
            x = torch.sigmoid(x)
    return x


@S.case("test_exception_with_another_exception", (_x(),))
def nested_raise_inside_handler(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        raise NotImplementedError("a")
    except NotImplementedError:
        x = torch.sigmoid(x)
        try:
            x = x * 3
            raise AssertionError
        except AssertionError:
            x = torch.cos(x)
    return x


@contextlib.contextmanager
def _converts_to_value_error():
    try:
        yield
    except BaseException:
        raise ValueError  # noqa: B904


@contextlib.contextmanager
def _does_nothing():
    try:
        yield
    finally:
        pass


@S.case("test_foo", (_x(),))
def contextmanager_converts_exception(x):
    z = 0
    with _does_nothing():
        try:
            with _converts_to_value_error():
                raise IndexError
        except ValueError:
            z = 1
        except IndexError:
            z = 2
    return x * z


def _cos(x):
    return torch.cos(x)


@S.case("test_exception_else", (_x(),))
def try_else_branch_runs(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        x = _cos(x)
    except Exception:
        x = x * 100
    else:
        x = torch.exp(x)
    return x


def _sigmoid_then_reraise(x):
    try:
        x = torch.cos(x)
        raise NotImplementedError("n")
    except NotImplementedError:
        x = torch.sigmoid(x)
        raise


@S.case("test_exception_with_another_exception2", (_x(),), fullgraph=False)
def bare_raise_in_callee_caught_by_caller(x):
    try:
        x = torch.cos(x)
        _sigmoid_then_reraise(x)
    except Exception:
        pass
    return x


@S.case("test_exception_with_ctx_manager", (_x(),))
def raise_inside_no_grad_block(x):
    x = torch.cos(x)
    try:
        with torch.no_grad():
            x = torch.sin(x)
            raise NotImplementedError("n")
    except NotImplementedError:
        x = torch.sigmoid(x)
    return x, torch.is_grad_enabled()


def _always_raises():
    raise NotImplementedError("from child")


@S.case("test_exception_raised_from_child", (_x(),))
def exception_from_called_function(x):
    x = torch.cos(x)
    try:
        x = torch.sin(x)
        _always_raises()
        x = x * 100
    except Exception:
        x = torch.sigmoid(x)
    return x


def _maybe_raise(x, k=None):
    if k:
        raise TypeError("error")
    return x.sin()


@S.case("test_dynamo_undo_kw_names", (torch.linspace(0, 1, 6).view(2, 3),))
def keyword_call_raising_then_dict_loop(x):
    d = {"a": x}
    y = 0
    try:
        _maybe_raise(x, k=True)
    except Exception:
        for _, b in d.items():
            y = y + b.sum()
    return y


class LocalExc(Exception):
    pass


@S.case("test_raise_custom_exception", (_x(),))
def custom_exception_caught_by_its_class(t):
    try:
        raise LocalExc
    except LocalExc:
        return t.sin()
    except Exception:
        return t.cos()


@S.case("test_raise_custom_exception_with_args", (_x(),))
def custom_exception_args_read(t):
    try:
        raise LocalExc(1, 2.5)
    except LocalExc as e:
        return t.sin() + e.args[0] + e.args[1]
    except Exception:
        return t.cos()


class PrefixLookup:
    def __init__(self):
        self._b = 20

    def __getattr__(self, name):
        key = "_" + name
        if key in self.__dict__:
            return self.__dict__[key]
        raise AttributeError(f"{name} absent")


class PrefixLookupWithDefault(PrefixLookup):
    def __init__(self):
        self.a = 10

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return 30


_LOOKUP = PrefixLookupWithDefault()


@S.case("test_nn_module_getattr", (torch.ones(4),))
def getattr_catching_attribute_error_from_super(x):
    return x * _LOOKUP.a * _LOOKUP.b * _LOOKUP.c


class CopyingModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_parameter("a", torch.nn.Parameter(torch.ones(4) * 2))

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "a_copy":
                return self.a
            raise

    def forward(self, x):
        return x * self.a * self.a_copy


S.add("test_custom_getattr_on_module_exception", "module_getattr_falls_back_on_attribute_error", None,
      [(torch.ones(4),)], module=CopyingModule)


class OnlyA:
    def __init__(self):
        self.a = 5

    def __getattr__(self, name):
        if name != "a":
            raise AttributeError("missing")
        return self.__dict__["a"]


_ONLY_A = OnlyA()


@S.case("test_attribute_error_from_getattr", (_x(),))
def hasattr_false_from_raising_getattr(x):
    if hasattr(_ONLY_A, "b"):
        return torch.cos(x)
    return torch.sin(x)


def _zip_longest(*iterables, fillvalue=None):
    its = [iter(it) for it in iterables]
    out = []
    while True:
        for it in its:
            try:
                v = next(it)
            except StopIteration:
                out.append(fillvalue)
                return out
            out.append(v)


@S.case("test_stop_iteration", ([1, 2, 3, 4], [10, 11, 12]))
def stopiteration_caught_in_helper(x, y):
    torch.cos(torch.ones(4))
    return tuple(_zip_longest(x, y))


class RaisingForward(torch.nn.Module):
    def forward(self, x):
        raise ValueError("woof")


def _hooked_raising():
    m = RaisingForward()
    m.register_forward_pre_hook(lambda mod, args: None)
    return m


_HOOKED = _hooked_raising()


@S.case("test_nn_reraise", (torch.ones(3),), fullgraph=False)
def module_forward_raising_propagates(x):
    return _HOOKED(x)


@S.case("test_key_error", (_x(), {"a": 1}))
def key_error_caught(x, d):
    try:
        a = d["b"]
    except KeyError:
        a = 2
    return x * a


class HasA:
    def __init__(self):
        self.a = 1


_HAS_A = HasA()


@S.case("test_atrribute_error", (_x(),), fullgraph=False)
def attribute_error_caught(x):
    try:
        c = 2
        _HAS_A.b
    except AttributeError:
        c = 3
    return torch.sin(x) * c


class ReRaisingMapping:
    def __init__(self, d):
        self._d = d

    def __getitem__(self, key):
        try:
            value = self._d[key]
        except KeyError:
            raise KeyError(key) from None
        return value


def _mapping_get(obj, key, value=None):
    try:
        return obj.__getitem__(key)
    except KeyError:
        return value


@S.case("test_raise_from_None", (torch.ones(2, 3), ReRaisingMapping({"a": 10}), "m"),
        (torch.ones(2, 3), ReRaisingMapping({"a": 10}), "a"))
def raise_from_none_inside_getitem(x, d, key):
    return torch.sin(x + 1), _mapping_get(d, key)


@S.case("test_ensure_exception_is_active_after_try_except_block", (_x(),))
def bare_raise_after_inner_handlers(x):
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            for exc in (KeyError, IndexError):
                try:
                    raise exc
                except exc:
                    pass
            raise
    except ZeroDivisionError:
        return x * 2
    return x


@S.case("test_ensure_exception_is_active_inside_try_except_block", (_x(),))
def inner_exception_context_is_outer(x):
    seen = []
    try:
        try:
            1 / 0
        except ZeroDivisionError:
            for exc in (KeyError, IndexError):
                try:
                    raise exc
                except exc as e:
                    seen.append(isinstance(e.__context__, ZeroDivisionError))
            raise
    except ZeroDivisionError:
        pass
    return x + 1, seen


@S.case("test_raise_GeneratorExit", (_x(),))
def generator_exit_is_not_an_exception(t):
    try:
        raise GeneratorExit
    except Exception:
        return t.sin()
    except BaseException:
        return t.cos()


def _pop_or(dt, x):
    try:
        dt.pop("b")
    except KeyError:
        return torch.sin(x)
    else:
        return torch.cos(x)


S.add("test_dict_pop", "dict_pop_key_error_or_else", _pop_or, [lambda: ({"a": 1}, _x()), lambda: ({"a": 1, "b": 2}, _x())])

_PARAMS = {"a": 3, "b": 4, "c": 5}
_DT = {"c": 5}


@S.case("test_block_stack_cleanup", (_x(),))
def key_error_handler_inside_loop(x):
    for name in _PARAMS:
        try:
            x = x * _DT[name]
        except KeyError:
            x = x * torch.sin(x)
    return x


@S.case("test_user_defined_exception_variable", (_x(),))
def module_level_custom_exception(t):
    z = 0
    try:
        raise Custom
    except ValueError:
        z = 1
    except Custom:
        z = 2
    return t.sin() * z


@S.case("test_user_defined_exception_with_args", (_x(),))
def custom_exception_with_init_args(t):
    z = 0
    try:
        raise CustomWithArgs(2, b=3)
    except ValueError:
        z = 1
    except CustomWithArgs as e:
        z = e.a * e.b
    return t * z


@S.case("test_raise_set___context__", (_x(),))
def caught_exceptions_have_no_context(x):
    try:
        raise TypeError
    except TypeError as e:
        first = e
    try:
        raise ValueError
    except ValueError as e:
        second = e
    return x, first.__context__ is None, second.__context__ is None


@S.case("testChainingDescriptors", (_x(),))
def exception_context_cause_suppress_descriptors(x):
    try:
        raise Exception  # noqa: TRY002
    except Exception as exc:
        e = exc
    out = [e.__context__ is None, e.__cause__ is None, e.__suppress_context__]
    e.__context__ = NameError()
    e.__cause__ = None
    out += [isinstance(e.__context__, NameError), e.__cause__ is None, e.__suppress_context__]
    e.__suppress_context__ = False
    return x, out + [e.__suppress_context__]


@S.case("test_context_of_exception_in_try_and_finally", (_x(),))
def finally_raise_has_try_raise_as_context(x):
    try:
        try:
            te = TypeError(1)
            raise te
        finally:
            ve = ValueError(2)
            raise ve
    except Exception as e:
        exc = e
    return x, exc is ve, exc.__context__ is te


@S.case("test_context_of_exception_in_except_and_finally", (_x(),))
def context_chain_through_except_and_finally(x):
    try:
        try:
            te = TypeError(1)
            raise te
        except Exception:
            ve = ValueError(2)
            raise ve  # noqa: B904
        finally:
            oe = OSError(3)
            raise oe
    except Exception as e:
        exc = e
    return x, exc is oe, exc.__context__ is ve, exc.__context__.__context__ is te


@S.case("test_context_of_exception_in_else_and_finally", (_x(),))
def context_chain_through_else_and_finally(x):
    try:
        try:
            pass
        except Exception:
            pass
        else:
            ve = ValueError(1)
            raise ve
        finally:
            oe = OSError(2)
            raise oe
    except Exception as e:
        exc = e
    return x, exc is oe, exc.__context__ is ve


@S.case("test_raise_does_not_create_context_chain_cycle", (_x(),))
def reraise_outer_exception_reorders_chain(x):
    try:
        try:
            raise AssertionError
        except AssertionError as a_:
            a = a_
            try:
                raise BytesWarning
            except BytesWarning as b_:
                b = b_
                try:
                    raise ConnectionError
                except ConnectionError as c_:
                    c = c_
                    raise a  # noqa: B904
    except AssertionError as e:
        exc = e
    return x, exc is a, a.__context__ is c, c.__context__ is b, b.__context__ is None


def _cycle():
    try:
        raise ValueError(1)
    except ValueError as ex:
        ex.__context__ = ex
        raise TypeError(2)  # noqa: B904


@S.case("test_no_hang_on_context_chain_cycle1", (_x(),))
def self_referencing_context_does_not_hang(x):
    try:
        _cycle()
    except Exception as e:
        exc = e
    return x, type(exc).__name__, type(exc.__context__).__name__, exc.__context__.__context__ is exc.__context__


@S.case("test_no_hang_on_context_chain_cycle3", (_x(),))
def longer_context_cycle(x):
    try:
        try:
            raise AssertionError
        except AssertionError as _a:
            a = _a
            try:
                raise BytesWarning
            except BytesWarning as _b:
                b = _b
                try:
                    raise ConnectionError
                except ConnectionError as _c:
                    c = _c
                    a.__context__ = c
                    try:
                        raise DeprecationWarning
                    except DeprecationWarning as _d:
                        d = _d
                        e = Exception()
                        raise e  # noqa: B904
    except Exception as got:
        exc = got
    return (x, exc is e, e.__context__ is d, d.__context__ is c, c.__context__ is b, b.__context__ is a,
            a.__context__ is c)

test_behaviour = S.pytest_function()
