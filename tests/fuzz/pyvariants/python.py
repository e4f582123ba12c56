"""Variants about the language: exceptions raised and caught, builtins called with bad arguments,
isinstance, iteration over containers and string formatting."""
from __future__ import annotations

from tests.fuzz.pyvariants.base import B, Body, V, Variant
from tests.fuzz.pyvariants.objects import OBJECT

_RAISER = """class Err$k(Exception):
    pass
def check$k(t, limit):
    if limit < 0:
        raise Err$k(limit)
    return t + limit"""


def _raises_type_error(call: str) -> Body:
    return B(f"try:\n    {call}\n    ok$k = True\nexcept TypeError:\n    ok$k = False\n    acc = acc + 1",
             out=("ok$k",))


PYTHON: dict[str, Variant] = {
    # -- exceptions -----------------------------------------------------------------------------
    "exception_key_error": V([B("try:\n    v$k = D$k['b']\nexcept KeyError:\n    v$k = -1", "acc = acc + v$k")],
                             ["D$k = {'a': 1}"], ["D$k['b'] = 5", "D$k.pop('b', None)"]),
    "exception_raised_caught": V([B("try:\n    if G$k > 1:\n        raise ValueError('big')\n    acc = acc + 1\n"
                                    "except ValueError as e$k:\n    acc = acc - len(str(e$k))")],
                                 ["G$k = 2"], ["G$k = 0", "G$k = 5"]),
    "exception_of_helper": V([B("try:\n    acc = check$k(acc, LIM$k)\nexcept Err$k as e$k:\n"
                                "    acc = acc * e$k.args[0]\nfinally:\n    acc = acc + 0.5")],
                             [_RAISER, "LIM$k = 1"], ["LIM$k = -2", "LIM$k = 3"]),
    "exception_index_error": V([B("try:\n    v$k = L$k[2]\nexcept IndexError:\n    v$k = 0", "acc = acc + v$k")],
                               ["L$k = [1, 2]"], ["L$k.append(7)", "L$k[:] = [1]"]),
    "exception_attribute_error": V([B("try:\n    v$k = O$k.extra\nexcept AttributeError:\n    v$k = 1",
                                      "acc = acc * v$k")],
                                   [OBJECT, "O$k = C$k()"], ["O$k.extra = 3", "O$k.__dict__.pop('extra', None)"]),
    "exception_in_loop": V([B("for v$k in L$k:\n    try:\n        acc = acc / v$k\n    except ZeroDivisionError:\n"
                              "        acc = acc + 1")],
                           ["L$k = [1, 2]"], ["L$k.append(0)", "L$k[:] = [0, 4]"]),
    "exception_reraised": V([B("try:\n    try:\n        raise KeyError(NAME$k)\n    except KeyError as e$k:\n"
                               "        raise ValueError(str(e$k)) from e$k\nexcept ValueError as w$k:\n"
                               "    acc = acc + len(str(w$k))\n    msg$k = repr(w$k.__cause__)", out=("msg$k",))],
                            ["NAME$k = 'a'"], ["NAME$k = 'bcd'"]),
    "builtin_bad_arguments": V([_raises_type_error(call) for call in (
        "len(5)", "isinstance(acc, 3)", "hasattr(acc)", "int(None)", "abs('a')", "sum(1)", "max()", "getattr(acc)",
        "callable()", "issubclass(G$k, int)", "divmod(acc)", "round(acc, 1, 2)")], ["G$k = 1"]),
    "isinstance_bad_keyword": V([_raises_type_error("isinstance(acc, torch.Tensor, bad=True)"),
                                 _raises_type_error("isinstance(G$k, int, strict=False)")], ["G$k = 1"]),
    # -- builtins over containers, string formatting ---------------------------------------------
    "builtin_isinstance": V([B("kind$k = isinstance(G$k, int)", "acc = acc + (1 if isinstance(G$k, float) else 2)",
                               out=("kind$k",)),
                             B("acc = acc * (3 if isinstance(G$k, (list, tuple)) else 1)"),
                             B("kind$k = isinstance(acc, torch.Tensor) and not isinstance(G$k, bool)",
                               out=("kind$k",))],
                            ["G$k = 1"], ["G$k = 1.5", "G$k = [1]", "G$k = True"]),
    "builtin_iteration": V([B("for i, v in enumerate(L$k):\n    acc = acc + i * v"),
                            B("s$k = sorted(L$k)", "acc = acc + s$k[0]", out=("s$k",)),
                            B("for a$k, b$k in zip(L$k, reversed(L$k)):\n    acc = acc + a$k - b$k"),
                            B("acc = acc + sum(v for v in L$k if v > 1)"),
                            B("pairs$k = dict(zip(['a', 'b'], L$k))", out=("pairs$k",)),
                            B("acc = acc * (1 if any(v > 2 for v in L$k) else 2)"),
                            B("acc = acc + len(set(L$k))")],
                           ["L$k = [3, 1, 2]"], ["L$k.append(5)", "L$k.sort()", "L$k[0] = -1", "L$k = [2, 2]"]),
    "comprehensions": V([B("acc = acc + sum([v * 2 for v in L$k])"),
                         B("d$k = {k: v for k, v in D$k.items() if v > 1}", "acc = acc + len(d$k)", out=("d$k",)),
                         B("acc = acc + sum(t.sum() for t in [acc, acc * 2])"),
                         B("keys$k = sorted(k for k in D$k)", out=("keys$k",))],
                        ["L$k = [1, 2]\nD$k = {'a': 1, 'b': 2}"], ["L$k.append(3)", "D$k['c'] = 5", "D$k.pop('b', None)"]),
    "string_format": V([B("s$k = f'{NAME$k}-{G$k}-{acc.shape[0]}'", "acc = acc + len(s$k)", out=("s$k",)),
                        B("s$k = '%s:%d' % (NAME$k, G$k)", out=("s$k",)),
                        B("s$k = '{}|{:.2f}'.format(NAME$k, G$k)", out=("s$k",)),
                        B("s$k = str(acc.dtype) + repr(NAME$k) + str(acc.shape)", out=("s$k",)),
                        B("s$k = f'{G$k!r:>5}'", "acc = acc * len(s$k)", out=("s$k",))],
                       ["G$k = 3\nNAME$k = 'a'"], ["G$k = 4.5", "NAME$k = 'bb'", "G$k = -1"]),
}
