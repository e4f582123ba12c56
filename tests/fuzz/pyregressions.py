"""The known bugs that the Python-program fuzzer found: one minimal program each (shrunk by
``shrink.py``), run by ``test_pyfuzz.py`` on the backends named. A case whose bug is not fixed
is a strict expected failure with its reason, so a fix shows up as an XPASS and the table only
shrinks; ``variants`` names the generator's variants (``pyvariants.VARIANTS``) that hit the bug,
which the seeded share in CI leaves out until the case passes (``known``).
"""
from __future__ import annotations

from typing import NamedTuple

from tests.fuzz.pyprogram import PyProgram


class Case(NamedTuple):
    backends: tuple[str, ...]
    program: PyProgram
    xfail: str | None = None
    variants: tuple[str, ...] = ()


ALL = ("eager", "aot_eager", "inductor")

_MODEL_OUTPUT = ("from transformers.utils import ModelOutput",
                 "@dataclasses.dataclass\nclass Out(ModelOutput):\n    logits: torch.Tensor = None\n"
                 "    loss: torch.Tensor = None")

_RECORD = "@dataclasses.dataclass\nclass R:\n    a: torch.Tensor\n    n: int = 0"

CASES: dict[str, Case] = {
    # issue 45 item 1: objects built during capture lose the mutations made after they were built
    "attribute_set_on_built_model_output": Case(ALL, PyProgram(
        setup=("A0 = rand(4, seed=3295)",) + _MODEL_OUTPUT,
        stmts=("acc = x0 * 1.0", "o = Out(logits=acc)\no.loss = acc.sum()", "acc = acc + o.loss"),
        outputs=("acc",), args=(("x0", "A0"),), calls=1),
        None,
        ("built_model_output",)),
    "item_set_on_built_model_output": Case(ALL, PyProgram(
        setup=("A0 = rand(4, seed=5064)",) + _MODEL_OUTPUT,
        stmts=("acc = x0 * 1.0", "o = Out(logits=acc)\no['loss'] = acc.mean()", "acc = acc * o[1]"),
        outputs=("acc",), args=(("x0", "A0"),), calls=1),
        None, ("built_model_output",)),
    "attribute_set_on_built_dataclass": Case(ALL, PyProgram(
        setup=("A0 = rand(3, seed=1)", _RECORD),
        stmts=("acc = x0 * 1.0", "r = R(acc)\nr.a = acc * 2", "acc = r.a"),
        outputs=("acc",), args=(("x0", "A0"),), calls=1),
        None,
        ("built_dataclass",)),
    "attribute_set_on_built_object_kept_in_a_global": Case(ALL, PyProgram(
        setup=("A0 = rand(3, seed=1)", _RECORD, "LAST = None"),
        stmts=("acc = x0 * 1.0", "global LAST\nLAST = R(acc.detach())\nLAST.n = 5"),
        outputs=("acc",), args=(("x0", "A0"),), calls=1),
        None, ("built_then_stored",)),
    "attribute_set_on_built_tensor": Case(ALL, PyProgram(
        setup=("A0 = rand(4, seed=5869)",),
        stmts=("acc = x0 * 1.0", "u = acc * 2\nu.tag = len(x0)"),
        outputs=("hasattr(u, 'tag')",), args=(("x0", "A0"),), calls=1),
        None,
        ("tensor_attr_set_in_call",)),
    # issue 45 item 3: reads that are not guarded
    "getattr_default_of_missing_attribute": Case(ALL, PyProgram(
        setup=("A0 = rand(3, seed=8636)", "cfg = types.ModuleType('cfg')"),
        stmts=("acc = x0 * 1.0", "cfg.calls = getattr(cfg, 'calls', 0) + 1", "acc = acc * cfg.calls"),
        outputs=("acc",), args=(("x0", "A0"),), calls=2),
        None,
        ("module_object", "tensor_attr_set_in_call")),
    "getattr_default_of_missing_class_attribute": Case(ALL, PyProgram(
        setup=("A0 = rand(3, seed=3913)", "class C:\n    scale = 2.0", "O = C()"),
        stmts=("acc = x0 * 1.0", "type(O).n_calls = getattr(type(O), 'n_calls', 0) + 1"),
        outputs=("acc",), args=(("x0", "A0"),), calls=2),
        "guards: getattr(cls, name, default) of an absent class attribute is not guarded: the second "
        "call stores 1 again (issue 45 item 3)", ("class_attr_mutated_in_call",)),
    "property_replaced_on_class": Case(ALL, PyProgram(
        setup=("A0 = rand(4, seed=2865)",
               "class Q:\n    def __init__(self):\n        self._v = 1.0\n    @property\n    def v(self):\n"
               "        return self._v * 2", "QO = Q()"),
        stmts=("acc = x0 * 1.0", "acc = acc * QO.v"),
        outputs=("acc",), args=(("x0", "A0"),), mutations=((1, "Q.v = property(lambda self: 5.0)"),), calls=2),
        None, ("property_replaced",)),
    "method_patched_on_class": Case(ALL, PyProgram(
        setup=("A0 = rand(2, 4, seed=6935)", "class C:\n    scale = 2.0\n    def step(self, t):\n"
                                             "        return t * self.scale", "O = C()"),
        stmts=("acc = x0 * 1.0", "acc = O.step(acc)"),
        outputs=("acc",), args=(("x0", "A0"),), mutations=((1, "C.step = lambda self, t: t - self.scale"),),
        calls=2),
        None, ("method_patched",)),
    "method_patched_on_instance": Case(ALL, PyProgram(
        setup=("A0 = rand(2, 4, seed=6935)", "class C:\n    scale = 2.0\n    def step(self, t):\n"
                                             "        return t * self.scale", "O = C()"),
        stmts=("acc = x0 * 1.0", "acc = O.step(acc)"),
        outputs=("acc",), args=(("x0", "A0"),),
        mutations=((1, "O.step = types.MethodType(lambda self, t: t * 3, O)"),), calls=2),
        "guards: an instance attribute that shadows a method is not seen: no guard on the instance's "
        "__dict__ (issue 45 item 3)", ("method_patched",)),
    "contains_of_user_object": Case(ALL, PyProgram(
        setup=("A0 = rand(2, 4, seed=27)", "class Box:\n    def __init__(self):\n        self.items = [1, 2]\n"
                                           "    def __contains__(self, v):\n        return v in self.items",
               "UC = Box()"),
        stmts=("acc = x0 * 1.0", "acc = acc * (2 if 3 in UC else 1)"),
        outputs=("acc",), args=(("x0", "A0"),), mutations=((1, "UC.items.append(3)"),), calls=2),
        "guards: `v in obj` through a user __contains__ is not guarded on what it read (issue 45 item 3)",
        ("user_container",)),
    "lru_cache_result_baked": Case(ALL, PyProgram(
        setup=("A0 = rand(3, seed=7208)", "import functools\nSCALE = 2\n@functools.lru_cache(maxsize=None)\n"
                                          "def cached(n):\n    return n * SCALE"),
        stmts=("acc = x0 * 1.0", "acc = acc * cached(2)"),
        outputs=("acc",), args=(("x0", "A0"),), mutations=((1, "SCALE = 3"), (1, "cached.cache_clear()")),
        calls=2),
        "guards: the result of an lru_cache'd function is kept without a guard on its cache: after "
        "cache_clear() and a new global the old value comes back (issue 45 item 3)", ("lru_cached_reader",)),
    "helper_defaults_replaced": Case(ALL, PyProgram(
        setup=("A0 = rand(2, 4, seed=6890)", "def h(t, a=2, *, b=0.5):\n    return t * a + b"),
        stmts=("acc = x0 * 1.0", "acc = h(acc, b=1.0)"),
        outputs=("acc",), args=(("x0", "A0"),), mutations=((2, "h.__defaults__ = (3,)"),), calls=3),
        None,
        ("defaults_of_helper", "defaults_tensor", "defaults_tensor_mutated_in_call")),
    "f_kwdefaults_replaced": Case(ALL, PyProgram(
        setup=("A0 = rand(4, seed=9808)",),
        stmts=("acc = x0 * 1.0", "acc = acc + len(ml)"),
        outputs=("acc",), args=(("x0", "A0"),), kwparams=(("ml", "[]"),),
        mutations=((2, "f.__kwdefaults__['ml'] = [5, 6]"),), calls=3),
        None,
        ("defaults_of_f", "defaults_mutable_of_f")),
    "environment_variable_read": Case(ALL, PyProgram(
        setup=("A0 = rand(4, seed=5819)",),
        stmts=("acc = x0 * 1.0", "acc = acc * int(os.environ.get('EMBER_FUZZ_1', '2'))"),
        outputs=("acc",), args=(("x0", "A0"),), mutations=((2, "os.environ['EMBER_FUZZ_1'] = '3'"),), calls=3),
        None, ("env_var",)),
    "tensor_attribute_read": Case(ALL, PyProgram(
        setup=("A0 = rand(3, seed=4286)",),
        stmts=("acc = x0 * 1.0", "acc = acc * getattr(x0, 'tag', 1)"),
        outputs=("acc",), args=(("x0", "A0"),), mutations=((2, "A0.tag = 0.5"),), calls=3),
        None,
        ("tensor_attr_of_arg", "tensor_attr_of_global", "second_argument")),
    # issue 45 item 4: in-place methods return their input object
    "inplace_method_returns_self": Case(ALL, PyProgram(
        setup=("A0 = rand(2, 4, seed=3551)",),
        stmts=("acc = x0 * 1.0", "r = acc.clamp_(min=-1)\nsame = r is acc"),
        outputs=("same",), args=(("x0", "A0"),), calls=1),
        None,
        ("identity_inplace_result",)),
    "inplace_operator_keeps_object": Case(ALL, PyProgram(
        setup=("A0 = rand(4, seed=2136)",),
        stmts=("acc = x0 * 1.0", "before = acc\nacc += 1\nsame = before is acc"),
        outputs=("same",), args=(("x0", "A0"),), calls=1),
        None,
        ("identity_inplace_result",)),
    # issue 45 item 5: dict views are live
    "dict_keys_view_live": Case(ALL, PyProgram(
        setup=("A0 = rand(3, seed=8527)",),
        stmts=("acc = x0 * 1.0", "d = {'a': acc}\nview = d.keys()\nd['b'] = acc * 2"),
        outputs=("list(view)",), args=(("x0", "A0"),), calls=1),
        None,
        ("dict_view_local",)),
    "dict_items_view_live": Case(ALL, PyProgram(
        setup=("A0 = rand(2, 4, seed=2991)",),
        stmts=("acc = x0 * 1.0", "d = {'a': 1}\nview = d.items()\nd['a'] = 5", "acc = acc + sum(v for _, v in view)"),
        outputs=("acc",), args=(("x0", "A0"),), calls=1),
        None,
        ("dict_view_local",)),
    "global_dict_view_unguarded": Case(ALL, PyProgram(
        setup=("A0 = rand(2, seed=1)", "D = {'a': 1, 'b': 2}\nKV = D.keys()"),
        stmts=("acc = x0 * 1.0", "acc = acc + len(KV)"),
        outputs=("acc",), args=(("x0", "A0"),), mutations=((1, "D['c'] = 3"),), calls=2),
        "guards: the length of a global dict view is read without a guard on its dict (issue 45 items 3, 5)",
        ("dict_view_global",)),
    # issue 45 item 6: builtins called with bad arguments raise as CPython does
    "isinstance_bad_keyword": Case(ALL, PyProgram(
        setup=("A0 = rand(3, seed=7678)",),
        stmts=("acc = x0 * 1.0", "try:\n    isinstance(acc, torch.Tensor, bad=True)\n    ok = True\n"
                                  "except TypeError:\n    ok = False\n    acc = acc + 1"),
        outputs=("acc",), args=(("x0", "A0"),), calls=1),
        None, ("isinstance_bad_keyword",)),
    # issue 45 item 11: generated code names np without binding it
    "numpy_float64_constant": Case(("eager",), PyProgram(
        setup=("A0 = rand(2, 4, seed=2991)", "NP = np.float64(2.5)"),
        stmts=("acc = x0 * 1.0", "acc = acc + NP"),
        outputs=("acc",), args=(("x0", "A0"),), calls=1),
        None,
        ("numpy_scalar",)),
}



def known(backend: str | None = None) -> frozenset[str]:
    """The variants that an unfixed case breaks on ``backend`` (None: on any backend)."""
    return frozenset(v for case in CASES.values() if case.xfail and (backend is None or backend in case.backends)
                     for v in case.variants)
