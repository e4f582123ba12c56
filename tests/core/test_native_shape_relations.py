"""Shape relations checked inside the C++ tensor check (ember.shape_relations, tensor_match.cpp):
the parser's forms, the C++ and Python guards accepting exactly the same inputs for every kind of
relation (sizes 0 and 1, strides 0, non-contiguous inputs, sizes and strides near the int64
limits), and, end to end, a call that breaks a relation recompiling, with the relation named."""
from __future__ import annotations

import itertools
import logging
import re
import types

import pytest
import torch

import ember
from ember import config, native_guards
from ember.capture.sources import LocalSource
from ember.guards import Check, GuardSet
from ember.shape_guards import TensorPropertySource
from ember.shape_relations import Linear, parse

from core_helpers import CountingBackend, no_fallback

X, Y = LocalSource("x"), LocalSource("y")
#: {0}, {1}: sizes of x and y; {2}: x's stride 0; {3}: y's stride 0; {4}: x's storage offset
READS = [TensorPropertySource(X, "size", 0), TensorPropertySource(Y, "size", 0),
         TensorPropertySource(X, "stride", 0), TensorPropertySource(Y, "stride", 0),
         TensorPropertySource(X, "storage_offset")]
BIG = 2 ** 63 - 1

#: printed as the ShapeEnv prints them; each kind in several spellings
RELATIONS = {
    "equality": ["{1} == {0}", "{0} == 6", "{2} == {1}", "6 == {0}"],
    "bounds": ["2 <= {0}", "{0} <= 5", "4 < {0}", "{0} > 3", "{0} < 4", "{0} >= 1", "{0} != 1",
               "2 <= {0} <= 5", "(2 <= {0}) and ({1} <= 5)", f"{{0}} <= {BIG - 1}", f"{{2}} >= {-BIG}"],
    "modulus": ["({0} % 2) == 0", "({0} % 3) == 1", "0 == ({1} % 5)", "({0} % 4) != 3",
                "(({0} + -1) % 3) == 2", "(({0} + (-1)*{1}) % 2) == 0", "2 > ({0} % 3)",
                f"(({{2}} + {{3}}) % {2 ** 62}) == 0"],
    "linear": ["1 + {0} + ((-1)*{1}) <= 0", "{2} == 256*{1}", "7 + ((-3)*{1}) + 2*{0} > 0",
               "{0} + {1} >= 9223372036854775807", f"{2 ** 32}*{{0}} + ((-1)*{{1}}) < 0",
               f"{-2 ** 32}*{{2}} + ((-{2 ** 32})*{{3}}) + {BIG} >= 0", "{4} + {0} == 78",
               "-({0} - {1}) + 3*({2} - 2*{1}) != 4", "{2} - {3} < 0"],
}
#: stay Python checks: not linear, or a coefficient or modulus past the bounds
PYTHON_ONLY = ["{0}*{1} <= 100", "({0} // 2) == 3", "({0} % {1}) == 0", f"{2 ** 32 + 1}*{{0}} > 0",
               f"({{0}} % {2 ** 62 + 1}) == 0", "{0} + 0*{1} - {0} == 0", "{0} == 1 or {1} == 1"]


def _corpus() -> list[torch.Tensor]:
    """2-d tensors: contiguous, transposed, sliced, offset, expanded (stride 0), sizes 0 and 1."""
    base = torch.randn(12, 12)
    return [torch.randn(n, 3) for n in (0, 1, 2, 3, 4, 5, 6, 7, 12)] + [
        base.t()[:, :3], base[::2, :3], base[1:7, 2:5], base[:, ::4], torch.randn(1, 3).expand(6, 3),
        torch.empty_strided((0, 3), (BIG, 1)), torch.empty_strided((6, 3), (256 * 6, 1)), base[6:, :3]]


def _meta_corpus() -> list[torch.Tensor]:
    """Sizes, strides and offsets at the int64 limits (meta tensors hold no data). Torch makes
    no negative strides (a stride below -2**62 is c10's tag of a symbolic int, which the tensor
    check rejects): negative values come from coefficients."""
    meta = dict(device="meta", dtype=torch.uint8)
    return [torch.empty(BIG, 1, **meta), torch.empty(BIG - 1, 1, **meta), torch.empty(2 ** 62, 1, **meta),
            torch.empty(2 ** 32, 1, **meta), torch.empty(2 ** 32 + 1, 1, **meta), torch.empty(3, 1, **meta),
            torch.empty_strided((0, 1), (2 ** 62 + 1, 1), **meta), torch.empty_strided((0, 1), (BIG - 1, 1), **meta),
            torch.empty_strided((1, 1), (BIG, 1), **meta), torch.empty_strided((2, 1), (2 ** 62, 1), **meta),
            torch.empty(10, 1, **meta).as_strided((1, 1), (1, 1), 2 ** 40)]


def _guard(template: str, like: torch.Tensor, native: bool, monkeypatch) -> tuple:
    """A guard of two dynamic 2-d tensors x and y like ``like`` and the relation ``template``."""
    monkeypatch.setattr(config, "native_guards", native)
    guards = GuardSet()
    dynamic = types.SimpleNamespace(shape=(None, like.shape[1]), stride=lambda: (None, like.stride(1)))
    guards.tensor(X, like, dynamic)
    guards.tensor(Y, like, dynamic)
    reads = [(s.base, s.prop, s.index) for s in READS]
    guards.checks.append(Check(template, tuple(READS), f"shape relation {template}", relations=parse(template, reads)))
    return guards.compile()



def test_parse_reads_each_kind_and_leaves_the_rest() -> None:
    reads = [(r.base, r.prop, r.index) for r in READS]
    x0, y0 = reads[0], reads[1]
    assert parse("{1} == {0}", reads) == (Linear(((x0, -1), (y0, 1)), 0, "=="),)
    assert parse("4 < {0}", reads) == (Linear(((x0, -1),), 4, "<"),)
    assert parse("2 <= {0} <= 5", reads) == (Linear(((x0, -1),), 2, "<="), Linear(((x0, 1),), -5, "<="))
    assert parse("0 == ({0} % 5)", reads) == (Linear(((x0, 1),), 0, "==", 5, 0),)
    assert parse("({0} % 3) == 1", reads) == (Linear(((x0, 1),), 0, "==", 3, -1),)
    assert parse("7 + ((-3)*{1}) + 2*{0} > 0", reads) == (Linear(((x0, 2), (y0, -3)), 7, ">"),)
    for template in PYTHON_ONLY:
        assert parse(template, reads) is None, template
    assert parse("{0} == {1}", [reads[0], None]) is None  # an int argument, not a tensor's size


@pytest.mark.parametrize("kind", [*RELATIONS, "python only"])
def test_native_and_python_guards_accept_the_same_relations(kind, native, monkeypatch) -> None:
    templates = RELATIONS.get(kind, PYTHON_ONLY)
    for template in templates:
        outcomes = set()
        for corpus in (_corpus(), _meta_corpus()):
            python, _ = _guard(template, corpus[-1], False, monkeypatch)
            compiled, _ = _guard(template, corpus[-1], True, monkeypatch)
            in_cpp = ".size()" not in compiled.__ember_source__ and ".stride()" not in compiled.__ember_source__
            assert in_cpp == (kind != "python only"), compiled.__ember_source__
            for x, y in itertools.product(corpus, repeat=2):
                L = {"x": x, "y": y}
                expected = python(L) is not None
                assert (compiled(L) is not None) == expected, (template, x.shape, x.stride(), y.shape, y.stride())
                outcomes.add(expected)
        assert outcomes == {True, False}, template  # the relation decided something both ways


def test_relations_run_only_on_tensors_that_matched(native) -> None:
    spec = (torch.Tensor, torch.float32, torch.device("cpu"), (-1,), (1,), False)
    match = native((spec, spec), ((((0, 0, 0, 1), (1, 0, 0, -1)), 0, 0, 0, 0),))
    assert match.count == 2 and match.relations == 1
    assert match((torch.randn(3), torch.randn(3))) is True
    assert match((torch.randn(3), torch.randn(4))) is False
    assert match((torch.randn(3, 1), torch.randn(3))) is False  # the spec fails first: no read
    for bad, message in [((((2, 0, 0, 1),), 0, 0, 0, 0), "not checked"), ((((0, 0, 1, 1),), 0, 0, 0, 0), "dimension"),
                         ((((0, 3, 0, 1),), 0, 0, 0, 0), "size"), ((((0, 0, 0, 2 ** 32 + 1),), 0, 0, 0, 0), "coefficient"),
                         (((), 0, 0, 0, 0), "terms"), ((((0, 0, 0, 1),), 0, 6, 0, 0), "op"),
                         ((((0, 0, 0, 1),), 0, 0, -2, 0), "modulus")]:
        with pytest.raises(ValueError, match=message):
            native((spec, spec), (bad,))
    with pytest.raises(OverflowError):
        native((spec,), ((((0, 0, 0, 1),), 2 ** 63, 0, 0, 0),))


class _Dynamic(CountingBackend):
    """Counts graphs; takes symbolic sizes."""


_BACKEND = _Dynamic()
ember.register_backend(_BACKEND, name="test_native_relations", dynamic=True)


def duck(x, y):
    return (x * 2).sum() + y.sum()


def bounded(x):
    return x + 1 if x.size(0) > 4 else x - 1


def divisible(x):
    return x.view(2, -1).sum(0) if x.size(0) % 2 == 0 else x * 3


def linear(x, y):
    return x.sum() + y.sum() if 2 * x.size(0) - 3 * y.size(0) + 7 > 0 else x.sum() - y.sum()


#: function, shapes it compiles for (once symbolic), shapes that break the relation, the relation
END_TO_END = {
    "equality": (duck, [((3,), (3,)), ((5,), (5,))], [((5,), (6,)), ((0,), (0,))], "L['y'].size()[0] == L['x'].size()[0]"),
    "bounds": (bounded, [((6,),), ((9,),)], [((4,),), ((1,),)], "5 <= L['x'].size()[0]"),
    "modulus": (divisible, [((4,),), ((6,),)], [((7,),), ((1,),)], "(L['x'].size()[0] % 2) == 0"),
    "linear": (linear, [((4,), (2,)), ((8,), (5,))], [((4,), (5,)), ((2,), (4,))],
               "7 + ((-3)*L['y'].size()[0]) + 2*L['x'].size()[0] > 0"),
}


@pytest.mark.parametrize("native_guards_on", [True, False], ids=["cpp", "python"])
@pytest.mark.parametrize("kind", END_TO_END)
def test_a_call_that_breaks_a_relation_recompiles_and_names_it(kind, native_guards_on, monkeypatch, caplog) -> None:
    if native_guards_on and native_guards.tensor_match() is None:
        pytest.skip("the C++ tensor check could not be built here")
    monkeypatch.setattr(config, "native_guards", native_guards_on)
    fn, compiled_for, breaking, relation = END_TO_END[kind]
    _BACKEND.graphs.clear()
    compiled = ember.compile(fn, backend="test_native_relations", dynamic=True)
    with no_fallback():
        for shapes in compiled_for:
            args = [torch.randn(s) for s in shapes]
            torch.testing.assert_close(compiled(*args), fn(*args))
    assert _BACKEND.count == 1
    entry = compiled.__ember__.entries[0]
    assert any(relation in d for d in entry.guard_descriptions), entry.guard_descriptions
    assert (".size()" not in entry.guard.__ember_source__) == native_guards_on
    for shapes in breaking:
        args = [torch.randn(s) for s in shapes]
        assert entry.guard(compiled.__ember__.bind(*args)) is None, shapes
        with caplog.at_level(logging.INFO, logger="ember.recompiles"):
            torch.testing.assert_close(compiled(*args), fn(*args))
    message = " ".join(r.getMessage() for r in caplog.records if r.name == "ember.recompiles")
    assert re.search(re.escape(f"shape relation {relation}  [") + r"[^;]*\bs\d+\b", message), message  # with symbols
    assert _BACKEND.count >= 2
