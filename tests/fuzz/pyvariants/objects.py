"""Variants about objects: instances of user classes, slots, properties, dataclasses and
``nn.Module``, objects built inside the call and mutated after, identity (``is``, ``id``) and
aliasing (two names for one list or tensor, in-place ops through views)."""
from __future__ import annotations

from tests.fuzz.pyvariants.base import TENSOR, B, V, Variant

_NN_MODULE = """class M$k(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear($n, $n)
        self.count = 0
        self.hist = []
        self.scale = 1.0
    def forward(self, t):
        self.count += 1
        if self.training:
            t = t * 2
        self.hist.append(self.count)
        return self.lin(t) * self.scale + len(self.hist)"""
_BUFFERED = """class MBuf$k(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear($n, $n)
        self.act = torch.nn.ReLU()
        self.register_buffer("steps", torch.zeros(()))
    def forward(self, t):
        self.steps += 1
        return self.act(self.lin(t)) + self.steps"""
OBJECT = """class C$k:
    scale = 2.0
    def __init__(self):
        self.n = 0
        self.items = [1, 2]
        self.on = True
    def step(self, t):
        self.n += 1
        return t * self.scale + self.n"""
_PROPERTY = """class Q$k:
    def __init__(self):
        self._v = 1.0
    @property
    def v(self):
        return self._v * 2
    @v.setter
    def v(self, value):
        self._v = value"""
_SLOTS = """class SL$k:
    __slots__ = ("a", "b")
    def __init__(self):
        self.a = 1
        self.b = [2]"""
_DATACLASS = """@dataclasses.dataclass
class DC$k:
    a: float = 1.0
    flag: bool = True
    items: list = dataclasses.field(default_factory=list)"""
RECORD = """@dataclasses.dataclass
class R$k:
    a: torch.Tensor
    n: int = 0"""
_MODEL_OUTPUT = """@dataclasses.dataclass
class MOut$k(ModelOutput):
    logits: torch.Tensor = None
    loss: torch.Tensor = None"""

OBJECTS: dict[str, Variant] = {
    # -- user objects, dataclasses, modules -----------------------------------------------------
    "object_attrs": V([B("acc = O$k.step(acc)"), B("if O$k.on:\n    acc = acc + len(O$k.items)"),
                       B("O$k.items.append(O$k.n)", "acc = acc * len(O$k.items)"), B("acc = acc * O$k.scale"),
                       B("O$k.last = acc.shape[0]"), B("if hasattr(O$k, 'extra'):\n    acc = acc + O$k.extra")],
                      [OBJECT, "O$k = C$k()"],
                      ["C$k.scale = 3.0", "O$k.scale = 0.5", "O$k.__dict__.pop('scale', None)",
                       "O$k.on = not O$k.on", "if O$k.items:\n    O$k.items.pop()", "O$k.n = 10", "O$k = C$k()",
                       "O$k.extra = 2"]),
    "object_property": V([B("acc = acc * Q$k_.v"), B("Q$k_.v = Q$k_.v + 1", "acc = acc + Q$k_.v")],
                         [_PROPERTY, "Q$k_ = Q$k()"], ["Q$k_.v = 3.0", "Q$k_._v = -1.0"]),
    "object_slots": V([B("acc = acc * SO$k.a + len(SO$k.b)"), B("SO$k.a = SO$k.a + 1", "SO$k.b.append(SO$k.a)")],
                      [_SLOTS, "SO$k = SL$k()"], ["SO$k.a = 5", "SO$k.b = []"]),
    "dataclass_global": V([B("acc = acc * DO$k.a"), B("if DO$k.flag:\n    acc = acc + 1"),
                           B("DO$k.items.append(1)", "acc = acc + len(DO$k.items)"), B("DO$k.a = DO$k.a + 1")],
                          [_DATACLASS, "DO$k = DC$k()"],
                          ["DO$k.a = 0.5", "DO$k.flag = False", "DO$k = DC$k(a=2.0)", "DO$k.items.clear()",
                           "DO$k = dataclasses.replace(DO$k, a=3.0)"]),
    "nn_module": V([B("acc = MO$k(acc)"), B("acc = acc + MO$k.count"),
                    B("if MO$k.training:\n    acc = acc * 0.5")],
                   [_NN_MODULE, "torch.manual_seed($s)\nMO$k = M$k()"],
                   ["MO$k.train(False)", "MO$k.train()", "MO$k.scale = 0.5", "MO$k.hist.clear()",
                    "with torch.no_grad():\n    MO$k.lin.weight.mul_(0.5)", "MO$k.lin.bias.requires_grad_(False)",
                    "MO$k.count = 100"]),
    "module_object": V([B("if cfg$k.DEBUG:\n    acc = acc + 10"),
                        B("cfg$k.calls = getattr(cfg$k, 'calls', 0) + 1", "acc = acc * cfg$k.calls")],
                       ["cfg$k = types.ModuleType('cfg$k')\ncfg$k.DEBUG = False"], ["cfg$k.DEBUG = True"]),
    "class_attr_mutated_in_call": V([B("C$k.scale = C$k.scale + 1", "acc = acc * O$k.scale"),
                                     B("type(O$k).n_calls = getattr(type(O$k), 'n_calls', 0) + 1")],
                                    [OBJECT, "O$k = C$k()"], ["C$k.scale = 0.5", "O$k.scale = 4.0"]),
    "method_patched": V([B("acc = O$k.step(acc)")], [OBJECT, "O$k = C$k()"],
                        ["C$k.step = lambda self, t: t - self.scale", "O$k.step = types.MethodType(lambda self, t: t * 3, O$k)",
                         "O$k.__dict__.pop('step', None)"]),
    "property_replaced": V([B("acc = acc * Q$k_.v")], [_PROPERTY, "Q$k_ = Q$k()"],
                           ["Q$k.v = property(lambda self: 5.0)", "Q$k_._v = 4.0"]),
    "inheritance": V([B("acc = DER$k.step(acc)"), B("acc = acc * DER$k.scale")],
                     [OBJECT, "class D$k(C$k):\n    def step(self, t):\n        return super().step(t) * 2",
                      "DER$k = D$k()"],
                     ["C$k.scale = 3.0", "D$k.scale = 0.5", "D$k.step = C$k.step"]),
    "user_getattr": V([B("acc = acc * (CF$k.a + CF$k.b)"), B("if CF$k.flag:\n    acc = acc + 1")],
                      ["class CFG$k:\n    def __init__(self):\n        object.__setattr__(self, 'values', {'a': 1})\n"
                       "    def __getattr__(self, name):\n        return self.values.get(name, 0)\nCF$k = CFG$k()"],
                      ["CF$k.values['b'] = 4", "CF$k.values['flag'] = True", "CF$k.values.clear()"]),
    "user_container": V([B("acc = acc + len(UC$k) + UC$k[0]"), B("for v in UC$k:\n    acc = acc * v"),
                         B("acc = acc * (2 if 3 in UC$k else 1)")],
                        ["class Box$k:\n    def __init__(self):\n        self.items = [1, 2]\n"
                         "    def __len__(self):\n        return len(self.items)\n"
                         "    def __getitem__(self, i):\n        return self.items[i]\n"
                         "    def __contains__(self, v):\n        return v in self.items\nUC$k = Box$k()"],
                        ["UC$k.items.append(3)", "UC$k.items[0] = 0.5", "UC$k.items = [2]"]),
    "context_manager": V([B("with CTX$k as c$k:\n    acc = acc + c$k.depth", out=("CTX$k.depth",)),
                          B("with CTX$k:\n    acc = acc * 2", "acc = acc + len(CTX$k.log)")],
                         ["class Ctx$k:\n    def __init__(self):\n        self.depth = 0\n        self.log = []\n"
                          "    def __enter__(self):\n        self.depth += 1\n        return self\n"
                          "    def __exit__(self, *exc):\n        self.depth -= 1\n        self.log.append('exit')\n"
                          "        return False\nCTX$k = Ctx$k()"],
                         ["CTX$k.log.clear()", "CTX$k.depth = 3"]),
    "enum_flag": V([B("if MODE$k is Mode$k.A:\n    acc = acc + 1"), B("acc = acc * MODE$k.value"),
                    B("s$k = MODE$k.name", out=("s$k",))],
                   ["import enum\nclass Mode$k(enum.Enum):\n    A = 1\n    B = 2\nMODE$k = Mode$k.A"],
                   ["MODE$k = Mode$k.B", "MODE$k = Mode$k.A"]),
    "nn_module_buffer_and_hooks": V([B("acc = MB$k(acc)"), B("acc = acc + MB$k.steps")],
                                    [_BUFFERED, "torch.manual_seed($s)\nMB$k = MBuf$k()"],
                                    ["MB$k.steps.zero_()", "MB$k.steps = torch.tensor(5.0)",
                                     "MB$k.register_forward_pre_hook(lambda m, args: (args[0] * 2,))",
                                     "MB$k._forward_pre_hooks.clear()", "MB$k.act = torch.nn.Tanh()",
                                     "MB$k.lin.weight = torch.nn.Parameter(torch.ones($n, $n))",
                                     "MB$k.requires_grad_(False)"]),
    # -- objects built in the call, then mutated ------------------------------------------------
    "built_dataclass": V([B("r$k = R$k(acc)\nr$k.a = acc * 2", "acc = r$k.a", out=("r$k",)),
                          B("r$k = R$k(acc)\nr$k.n = r$k.n + 1\nr$k.extra = acc + 1", "acc = r$k.extra * r$k.n")],
                         [RECORD]),
    "built_object": V([B("p$k = P$k(acc)\np$k.t = p$k.t + 1\np$k.k = 3", "acc = p$k.t * p$k.k", out=("p$k",))],
                      ["class P$k:\n    def __init__(self, t):\n        self.t = t"]),
    "built_model_output": V([B("o$k = MOut$k(logits=acc)\no$k.loss = acc.sum()", "acc = acc + o$k.loss",
                               out=("o$k", "len(o$k)")),
                             B("o$k = MOut$k(logits=acc)\no$k['loss'] = acc.mean()", "acc = acc * o$k[1]",
                               out=("list(o$k.keys())",)),
                             B("o$k = MOut$k(logits=acc)\no$k.logits = acc * 3", "acc = o$k[0]")],
                            ["from transformers.utils import ModelOutput", _MODEL_OUTPUT]),
    "built_then_stored": V([B("global LAST$k\nLAST$k = R$k(acc.detach())\nLAST$k.n = 5"),
                            B("BOX$k.append(R$k(acc.detach(), n=len(BOX$k)))")],
                           [RECORD, "LAST$k = None\nBOX$k = []"], ["BOX$k.clear()", "LAST$k = R$k(rand($S))"]),
    "built_list_dict": V([B("lst$k = [acc]\nlst$k.append(acc * 2)", "acc = sum(lst$k)", out=("lst$k",)),
                          B("d$k = {'x': acc}\nd$k['y'] = d$k['x'] + 1\ndel d$k['x']", "acc = d$k['y']",
                            out=("d$k",))]),
    # -- identity and aliasing ------------------------------------------------------------------
    "identity_inplace_result": V([B("r$k = acc.add_(1)\nsame$k = r$k is acc", out=("same$k",)),
                                  B("r$k = acc.mul_(2)", "acc = r$k + 1"),
                                  B("r$k = acc.clamp_(min=-1)\nsame$k = r$k is acc", out=("same$k", "r$k")),
                                  B("before$k = acc\nacc += 1\nsame$k = before$k is acc", out=("same$k",)),
                                  B("same$k = acc.copy_(acc * 0.5) is acc", out=("same$k",))]),
    "identity_of_globals": V([B("same$k = LB$k is L$k", out=("same$k",)),
                              B("acc = acc + (1 if TB$k is T$k else 2)"),
                              B("same$k = id(TB$k) == id(T$k)", out=("same$k",)),
                              B("same$k = x0 is A0", out=("same$k",))],
                             ["L$k = [1]\nLB$k = L$k", TENSOR + "\nTB$k = T$k"],
                             ["LB$k = list(L$k)", "LB$k = L$k", "TB$k = T$k.clone()", "TB$k = T$k",
                              "A0 = A0.detach().clone()"]),
    "second_argument": V([B("acc = acc + x1"), B("x1.add_(1)", "acc = acc * x1"),
                          B("same$k = x1 is x0", out=("same$k",)), B("x1.tag$k = 1")],
                         mutations=["A0.tag$k = 0"]),
    "identity_in_container": V([B("same$k = LT$k[0] is T$k", out=("same$k",)), B("LT$k[0].add_(1)", "acc = acc * T$k")],
                               [TENSOR + "\nLT$k = [T$k]"], ["LT$k[0] = T$k.clone()", "LT$k[0] = T$k"]),
    "alias_list": V([B("LB$k.append(2)", "acc = acc + len(L$k)")], ["L$k = [1]\nLB$k = L$k"],
                    ["LB$k = []", "LB$k = L$k"]),
    "alias_view_inplace": V([B("v$k = acc.view(-1)\nv$k.mul_(2)", "acc = acc + 1"),
                             B("v$k = acc[0]\nv$k.add_(1)"),
                             B("T$k[0].add_(1)", "acc = acc * T$k"),
                             B("TB$k.add_(1)", "acc = acc * T$k"),
                             B("gv$k = T$k.view(-1)\ngv$k.zero_()", "acc = acc + T$k", out=("gv$k",))],
                            [TENSOR + "\nTB$k = T$k"], ["TB$k = T$k.clone()", "TB$k = T$k"]),
}
