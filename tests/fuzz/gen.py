"""A seeded generator of random PyTorch programs (``Program``), valid in eager by construction.

Each statement is drawn from a template (pointwise chains, Python scalars, broadcasting, dtype
mixes, reductions, views, in-place ops on views and inputs, indexing and slicing, small control
flow on shapes and Python values, a few graph breaks) and kept only if the program still runs
eagerly with it: shapes and dtypes come from running the program, not from a model of torch.

Ops whose result jumps on a rounding difference (comparisons, floor, argmax, integer casts, sort
indices, data-dependent branches) only read *exact* values: inputs, and what views, integer ops
and exact float ops (neg, abs, relu, scaling by 2) make of them. Otherwise a last-bit difference
between two correct backends would show up as a mismatch.
"""
from __future__ import annotations

import dataclasses
import random
import re
import warnings
from typing import Any, Callable

import torch

from tests.fuzz.harness import execute
from tests.fuzz.program import Input, Program

_UNARY = ["sin", "cos", "tanh", "sigmoid", "exp", "relu", "abs", "neg", "erf", "square", "atan",
          "expm1", "log1p(ABS)", "sqrt(ABS)", "rsqrt(ABS1)", "log(ABS1)", "reciprocal(ABS1)",
          "F.gelu", "F.silu", "F.softplus", "F.elu", "F.leaky_relu", "F.hardtanh", "F.mish"]
_EXACT_UNARY = {"relu", "abs", "neg"}
_STEP = ["floor", "ceil", "round", "trunc", "sign"]
_BINARY = ["+", "-", "*", "/", "maximum", "minimum", "atan2", "where"]
_REDUCE = ["sum", "mean", "amax", "amin", "prod", "var", "std", "logsumexp", "softmax",
           "log_softmax", "cumsum", "max.values", "norm", "sum_all", "mean_all"]
_SCALARS = ["2", "-1", "3", "0.5", "2.5", "-1.5", "0.0"]


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.inputs: list[Input] = []
        self.stmts: list[str] = []
        self.env: dict[str, Any] = {}
        self.exact: set[str] = set()
        self.count = 0

    # -- picking -----------------------------------------------------------------------------
    def tensors(self, pred: Callable[[str, torch.Tensor], bool] = lambda n, t: True) -> list[str]:
        def ok(n: str, v: Any) -> bool:
            try:
                return isinstance(v, torch.Tensor) and pred(n, v)
            except RuntimeError:  # a view that an in-place op invalidated (unbind's outputs)
                return False
        return [n for n, v in self.env.items() if ok(n, v)]

    def pick(self, pred: Callable[[str, torch.Tensor], bool] = lambda n, t: True) -> str | None:
        names = self.tensors(pred)
        if not names:
            return None
        # favour recent values, so that programs are chains rather than flat fans
        weights = [1 + 2 * i for i in range(len(names))]
        return self.rng.choices(names, weights)[0]

    def pick_exact(self, pred: Callable[[str, torch.Tensor], bool] = lambda n, t: True) -> str | None:
        return self.pick(lambda n, t: n in self.exact and pred(n, t))

    def scalar(self, a: str) -> str:
        t = self.env[a]
        options = list(_SCALARS)
        options += [n for n, v in self.env.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if t.dim() > 0:
            options.append(f"{a}.shape[{self.rng.randrange(t.dim())}]")
        return self.rng.choice(options)

    def partner(self, a: str) -> str:
        """A tensor that broadcasts with ``a`` (or ``a`` itself), else a Python scalar."""
        shape = self.env[a].shape

        def fits(n: str, t: torch.Tensor) -> bool:
            try:
                return torch.broadcast_shapes(shape, t.shape) == shape or self.rng.random() < 0.3
            except RuntimeError:
                return False
        b = self.pick(fits) if self.rng.random() < 0.75 else None
        return b if b is not None else self.scalar(a)

    def new(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def dim(self, a: str) -> int:
        return self.rng.randrange(-self.env[a].dim(), self.env[a].dim()) if self.env[a].dim() else 0

    # -- templates: each returns (statement, defined name or None, exact) or None -------------
    def t_unary(self) -> Any:
        a = self.pick()
        if a is None:
            return None
        op = self.rng.choice(_UNARY)
        o = self.new()
        if op.startswith("F."):
            extra = ", 0.1" if op == "F.leaky_relu" else ""
            return f"{o} = {op}({a}{extra})", o, False
        if "(" in op:
            fn, arg = op[:-1].split("(")
            inner = f"{a}.abs()" if arg == "ABS" else f"({a}.abs() + 1)"
            return f"{o} = torch.{fn}({inner})", o, False
        call = f"{a}.{op}()" if self.rng.random() < 0.5 else f"torch.{op}({a})"
        return f"{o} = {call}", o, op in _EXACT_UNARY and a in self.exact

    def t_binary(self) -> Any:
        a = self.pick()
        if a is None:
            return None
        b = self.partner(a)
        if self.rng.random() < 0.5:
            a, b = b, a  # the scalar (or smaller operand) on the left too
        if not isinstance(self.env.get(a), torch.Tensor) and not isinstance(self.env.get(b), torch.Tensor):
            return None
        op = self.rng.choice(_BINARY)
        o = self.new()
        exact = a in self.exact or a not in self.env
        exact = exact and (b in self.exact or b not in self.env)
        if op in "+-*":
            return f"{o} = {a} {op} {b}", o, exact and op != "*"
        if op == "/":
            if isinstance(self.env.get(b), torch.Tensor):
                return f"{o} = {a} / ({b}.abs() + 1)", o, False
            return f"{o} = {a} / {b}" if b not in ("0.0", "0") else None, o, False
        if op == "where":
            c = self.pick_exact()
            if c is None or not all(isinstance(self.env.get(x), torch.Tensor) for x in (a, b)):
                return None
            return f"{o} = torch.where({c} > 0, {a}, {b})", o, exact
        if not all(isinstance(self.env.get(x), torch.Tensor) for x in (a, b)):
            return None
        return f"{o} = torch.{op}({a}, {b})", o, exact and op != "atan2"

    def t_scalar_chain(self) -> Any:
        a = self.pick()
        if a is None:
            return None
        o = self.new()
        s = self.scalar(a)
        form = self.rng.choice(["{a} * {s}", "{s} - {a}", "{a} ** 2", "({a} + {s}) * {a}",
                                "{a} * 2", "{a} / {s}", "-{a} + {s}"])
        if "/ {s}" in form and s in ("0.0",):
            return None
        return f"{o} = " + form.format(a=a, s=s), o, form in ("{a} * 2",) and a in self.exact

    def t_step(self) -> Any:
        a = self.pick_exact(lambda n, t: t.dtype.is_floating_point)
        if a is None:
            return None
        o = self.new()
        op = self.rng.choice(_STEP + ["cmp", "cast", "mod", "argmax", "bool_any", "sort_idx"])
        if op == "cmp":
            b = self.pick_exact() or "0"
            return f"{o} = ({a} {self.rng.choice(['>', '<=', '==', '!='])} {b})", o, True
        if op == "cast":
            return f"{o} = {a}.{self.rng.choice(['long', 'int'])}()", o, True
        if op == "mod":
            return f"{o} = {a} {self.rng.choice(['%', '//'])} 2", o, True
        if op == "argmax":
            return f"{o} = {a}.{self.rng.choice(['argmax', 'argmin'])}(dim={self.dim(a)})", o, True
        if op == "bool_any":
            return f"{o} = ({a} > 0).{self.rng.choice(['any', 'all'])}(dim={self.dim(a)})", o, True
        if op == "sort_idx":
            return f"{o} = {a}.sort(dim={self.dim(a)}).indices", o, True
        return f"{o} = torch.{op}({a})", o, True

    def t_int_ops(self) -> Any:
        a = self.pick(lambda n, t: not t.dtype.is_floating_point and t.dtype != torch.bool)
        if a is None:
            return None
        o = self.new()
        b = self.partner(a)
        op = self.rng.choice(["+", "*", "&", "|", "^", "%", "-"])
        if op in "&|^" and b in _SCALARS and "." in b:
            return None
        if op == "%" and b in ("0", "0.0") or op == "%" and isinstance(self.env.get(b), torch.Tensor):
            return f"{o} = {a} % 3", o, True
        return f"{o} = {a} {op} {b}", o, True

    def t_reduce(self) -> Any:
        a = self.pick(lambda n, t: t.dim() > 0)
        if a is None:
            return None
        op = self.rng.choice(_REDUCE)
        o = self.new()
        d, k = self.dim(a), self.rng.random() < 0.4
        if op == "sum_all":
            return f"{o} = {a}.sum()", o, a in self.exact and not self.env[a].dtype.is_floating_point
        if op == "mean_all":
            return f"{o} = {a}.float().mean()", o, False
        if op in ("softmax", "log_softmax"):
            return f"{o} = torch.{op}({a}.float(), dim={d})", o, False
        if op == "cumsum":
            return f"{o} = {a}.cumsum({d})", o, not self.env[a].dtype.is_floating_point
        if op == "max.values":
            return f"{o} = {a}.max(dim={d}, keepdim={k}).values", o, a in self.exact
        if op == "logsumexp":
            return f"{o} = torch.logsumexp({a}.float(), dim={d}, keepdim={k})", o, False
        if op in ("mean", "var", "std", "norm"):
            return f"{o} = {a}.float().{op}(dim={d}, keepdim={k})", o, False
        exact = op in ("amax", "amin") and a in self.exact
        exact = exact or (op in ("sum", "prod") and not self.env[a].dtype.is_floating_point)
        return f"{o} = {a}.{op}(dim={d}, keepdim={k})", o, exact

    def t_view(self) -> Any:
        a = self.pick()
        if a is None:
            return None
        t, o, r = self.env[a], self.new(), self.rng
        choice = r.choice(["reshape", "view", "transpose", "permute", "unsqueeze", "squeeze",
                           "slice", "select", "narrow", "expand", "flatten", "t", "chunk",
                           "diagonal", "contiguous", "unbind", "movedim", "T"])
        n = t.numel()
        if choice in ("reshape", "view"):
            divs = [k for k in range(1, n + 1) if n % k == 0]
            k = r.choice(divs) if divs else 1
            shape = r.choice([f"-1", f"{k}, -1", f"-1, {k}, 1", f"1, {k}, -1"])
            return f"{o} = {a}.{choice}({shape})", o, a in self.exact
        if t.dim() == 0:
            return f"{o} = {a}.unsqueeze(0)", o, a in self.exact
        d = self.dim(a)
        if choice == "transpose":
            return f"{o} = {a}.transpose({d}, {self.dim(a)})", o, a in self.exact
        if choice == "permute":
            perm = list(range(t.dim()))
            r.shuffle(perm)
            return f"{o} = {a}.permute({', '.join(map(str, perm))})", o, a in self.exact
        if choice == "unsqueeze":
            return f"{o} = {a}.unsqueeze({r.randrange(-t.dim() - 1, t.dim() + 1)})", o, a in self.exact
        if choice == "squeeze":
            return f"{o} = {a}.squeeze({d})", o, a in self.exact
        if choice == "slice":
            parts = []
            for size in t.shape[: r.randint(1, t.dim())]:
                start = r.choice(["", "1", "-2", str(size // 2)])
                stop = r.choice(["", "-1", str(size)])
                step = r.choice(["", "", "2"])
                parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
            if r.random() < 0.2:
                parts.insert(0, "...") if len(parts) < t.dim() else None
            return f"{o} = {a}[{', '.join(parts)}]", o, a in self.exact
        if choice == "select":
            return f"{o} = {a}[{r.randrange(-t.shape[0], t.shape[0]) if t.shape[0] else 0}]", o, a in self.exact
        if choice == "narrow":
            size = t.shape[d]
            start = r.randrange(size) if size else 0
            return f"{o} = {a}.narrow({d}, {start}, {max(size - start - r.randrange(2), 0)})", o, a in self.exact
        if choice == "expand":
            shape = [str(s if s != 1 else r.choice([1, 2, 3])) for s in t.shape]
            if r.random() < 0.3:
                shape.insert(0, "2")
            return f"{o} = {a}.expand({', '.join(shape)})", o, a in self.exact
        if choice == "flatten":
            return f"{o} = {a}.flatten()", o, a in self.exact
        if choice in ("t", "T"):
            return (f"{o} = {a}.t()" if choice == "t" else f"{o} = {a}.mT"), o, a in self.exact
        if choice == "chunk":
            return f"{o} = {a}.chunk(2, {d})[{r.randrange(2) - 1}]", o, a in self.exact
        if choice == "diagonal":
            return f"{o} = {a}.diagonal(0, {d}, {self.dim(a)})", o, a in self.exact
        if choice == "unbind":
            return f"{o} = {a}.unbind({d})[0]", o, a in self.exact
        if choice == "movedim":
            return f"{o} = {a}.movedim({d}, {self.dim(a)})", o, a in self.exact
        return f"{o} = {a}.contiguous()", o, a in self.exact

    def t_inplace(self) -> Any:
        a = self.pick(lambda n, t: not (t.is_leaf and t.requires_grad))
        if a is None:
            return None
        t, r = self.env[a], self.rng
        b = self.partner(a)
        target = a
        if t.dim() and r.random() < 0.4:
            size = t.shape[0]
            target = f"{a}[{r.choice(['1:', ':-1', '::2', '0', str(size - 1) if size else '0'])}]"
        form = r.choice(["{t}.add_({b})", "{t}.mul_({b})", "{t}.sub_({b})", "{t}.clamp_(min=-0.5)",
                         "{t}.fill_({s})", "{t}.zero_()", "{t}.copy_({b})", "{t}.relu_()",
                         "{t}.sigmoid_()", "{t}.neg_()", "{t} += {b}", "{t}[...] = {b}",
                         "{t}.masked_fill_({c} > 0, {s})", "{t}.div_(2)", "{t}.abs_()"])
        exact = form in ("{t}.fill_({s})", "{t}.zero_()", "{t}.relu_()", "{t}.neg_()",
                         "{t}.abs_()", "{t}.clamp_(min=-0.5)", "{t}.div_(2)")
        c = self.pick_exact() if "{c}" in form else None
        if "{c}" in form and c is None:
            return None
        if "{b}" in form:
            exact = exact or (form in ("{t}.add_({b})", "{t}.sub_({b})", "{t}.copy_({b})",
                                       "{t} += {b}", "{t}[...] = {b}")
                              and (b in self.exact or b not in self.env))
        stmt = form.format(t=target, b=b, s=self.scalar(a), c=c)
        if form.startswith("{t}.") and r.random() < 0.3:
            o = self.new()
            return f"{o} = {stmt}", (o, a), exact
        return stmt, (None, a), exact

    def t_index(self) -> Any:
        a = self.pick(lambda n, t: t.dim() > 0 and t.shape[0] > 0)
        if a is None:
            return None
        t, o, r = self.env[a], self.new(), self.rng
        n = t.shape[0]
        idx = [r.randrange(-n, n) for _ in range(r.randint(1, 3))]
        form = r.choice(["list", "index_select", "mask", "setitem", "cat", "stack", "flip",
                         "roll", "sort", "topk", "index_put", "gather"])
        if form == "list":
            return f"{o} = {a}[{idx}]", o, a in self.exact
        if form == "index_select":
            return (f"{o} = torch.index_select({a}, 0, torch.tensor({[i % n for i in idx]}))",
                    o, a in self.exact)
        if form == "mask":
            c = self.pick_exact(lambda _, u: u.shape == t.shape)
            return (f"{o} = {a}[{c} > 0]", o, a in self.exact) if c else None
        if form == "setitem":
            c = self.pick(lambda _, u: u.dim() == 0 or u.shape[-1:] == t.shape[-1:])
            return (f"{o} = {a}.clone()\n{o}[{idx}] = {c or self.scalar(a)}", o,
                    a in self.exact and (c is None or c in self.exact))
        if form == "index_put":
            return (f"{o} = {a}.index_put(({self.pick_exact(lambda _, u: u.shape == t.shape) or a} > 0,), "
                    f"torch.tensor({self.scalar(a)}, dtype={a}.dtype))", o, a in self.exact)
        if form in ("cat", "stack"):
            b = self.pick(lambda _, u: u.shape == t.shape if form == "stack" else u.shape[1:] == t.shape[1:])
            return f"{o} = torch.{form}([{a}, {b or a}], {self.dim(a) if form == 'cat' else 0})", o, False
        if form == "flip":
            return f"{o} = {a}.flip({self.dim(a)})", o, a in self.exact
        if form == "roll":
            return f"{o} = {a}.roll({r.randint(-2, 2)}, {self.dim(a)})", o, a in self.exact
        if form == "sort":
            return f"{o} = {a}.sort(dim={self.dim(a)}, descending={r.random() < 0.5}).values", o, a in self.exact
        if form == "topk":
            d = self.dim(a)
            return f"{o} = {a}.topk({r.randint(1, max(1, t.shape[d]))}, dim={d}).values", o, a in self.exact
        key = self.pick_exact(lambda _, u: u.shape == t.shape and u.dtype.is_floating_point)
        if key is None:
            return None
        d = self.dim(a)
        return f"{o} = {a}.gather({d}, {key}.argsort(dim={d}))", o, a in self.exact

    def t_dtype(self) -> Any:
        a = self.pick()
        if a is None:
            return None
        o, r = self.new(), self.rng
        form = r.choice(["{a}.to(torch.float64)", "{a}.float()", "{a}.double() * 1.5",
                         "torch.zeros_like({a}) + 1", "torch.ones({shape}) * {a}",
                         "torch.arange({n}) * {a}", "torch.full_like({a}, 2)", "{a}.type_as({b})",
                         "{a}.new_zeros({shape}).float()"])
        t = self.env[a]
        b = self.pick() or a
        n = t.shape[-1] if t.dim() else 1
        exact = a in self.exact and form not in ("{a}.double() * 1.5",)
        exact = exact and (form != "{a}.type_as({b})" or self.env[b].dtype.is_floating_point
                           or not t.dtype.is_floating_point)
        return f"{o} = " + form.format(a=a, b=b, shape=tuple(t.shape), n=n), o, exact

    def t_control(self) -> Any:
        a = self.pick()
        if a is None:
            return None
        t, o, r = self.env[a], self.new(), self.rng
        form = r.choice(["shape_if", "scalar_if", "loop", "data_if", "item", "pyint"])
        if form == "shape_if" and t.dim():
            d = self.dim(a)
            return (f"if {a}.shape[{d}] > {r.randint(1, 4)}:\n    {o} = {a} * 2\n"
                    f"else:\n    {o} = {a} - 1"), o, a in self.exact and t.shape[d] <= 4
        if form == "scalar_if":
            s = self.scalar(a)
            return f"if {s} > 1:\n    {o} = {a} + {s}\nelse:\n    {o} = {a}.neg()", o, False
        if form == "loop":
            k = r.randint(1, 3)
            return (f"{o} = {a}\nfor i in range({k}):\n    {o} = {o} * 0.5 + i"), o, False
        if form == "data_if":
            c = self.pick_exact()
            if c is None:
                return None
            return (f"if ({c} > 0).any():\n    {o} = {a} + 1\nelse:\n    {o} = {a} * 3"), o, False
        if form == "item":
            c = self.pick_exact(lambda _, u: not u.dtype.is_floating_point and u.dtype != torch.bool)
            if c is None:
                return None
            return f"{o} = {a} * {c}.sum().item()", o, False
        if t.dim() == 0:
            return None
        return f"{o} = {a} * ({a}.dim() + len({a}) + {a}.numel() % 3)", o, False

    TEMPLATES = [("t_unary", 4), ("t_binary", 5), ("t_scalar_chain", 2), ("t_step", 1),
                 ("t_int_ops", 1), ("t_reduce", 3), ("t_view", 4), ("t_inplace", 3),
                 ("t_index", 2), ("t_dtype", 1), ("t_control", 1)]

    # -- driving -----------------------------------------------------------------------------
    def make_inputs(self, training: bool) -> None:
        r = self.rng
        rank = r.choice([0, 1, 2, 2, 2, 3, 3])
        full = [r.choice([1, 2, 3, 3, 4, 4, 5]) for _ in range(rank)]
        for k in range(r.randint(1, 3)):
            dtype = r.choices(["float32", "float64", "int64", "int32", "bool"], [12, 1, 3, 1, 1])[0]
            shape = tuple(s if r.random() < 0.8 else 1 for s in full[r.randint(0, rank):])
            if k == 0:
                shape, dtype = tuple(full), "float32"
            grad = training and dtype.startswith("float") and (k == 0 or r.random() < 0.6)
            transposed = len(shape) >= 2 and r.random() < 0.2
            self.inputs.append(Input(f"x{k}", dtype, shape, grad, transposed))
        if r.random() < 0.3:
            kind = r.choice(["int", "float"])
            value = r.randint(-2, 3) if kind == "int" else r.choice([0.5, -1.5, 2.0])
            self.inputs.append(Input(f"s{len(self.inputs)}", kind, value=value))

    def run(self, stmts: list[str]) -> dict[str, Any] | None:
        """The locals after running ``stmts`` eagerly on fresh inputs, None if they raise."""
        program = Program(tuple(self.inputs), tuple(stmts), ("0",), self.seed)
        scope: dict[str, Any] = dict(zip((i.name for i in self.inputs), program.make_inputs()))
        namespace = {"torch": torch, "F": torch.nn.functional}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile("\n".join(stmts) or "pass", "<gen>", "exec"), namespace, scope)
        except Exception:
            return None
        return scope

    def aliases(self, scope: dict[str, Any], name: str) -> set[str]:
        base = scope[name]
        ptr = base.untyped_storage().data_ptr()
        return {n for n, v in scope.items() if isinstance(v, torch.Tensor)
                and v.untyped_storage().data_ptr() == ptr}

    def step(self) -> None:
        """Append one statement that keeps the program valid (up to 8 tries, else none)."""
        names = [n for n, _ in self.TEMPLATES]
        weights = [w for _, w in self.TEMPLATES]
        for _ in range(8):
            made = getattr(self, self.rng.choices(names, weights)[0])()
            if made is None or made[0] is None:
                continue
            stmt, defined, exact = made
            scope = self.run(self.stmts + [stmt])
            if scope is None:
                continue
            self.stmts.append(stmt)
            self.env = {n: scope[n] for n in scope if not n.startswith("__") and n != "i"}
            if isinstance(defined, tuple):  # in-place: the target (and its aliases) may change
                out, target = defined
                if not exact:
                    self.exact -= self.aliases(scope, target)
                if out is not None and exact and target in self.exact:
                    self.exact.add(out)
            elif exact:
                self.exact.add(defined)
            return


def generate(seed: int, training: bool | None = None, max_stmts: int = 10) -> Program:
    """A random program for ``seed``; ``training`` (default: random) gives float inputs grads."""
    g = _Gen(seed)
    if training is None:
        training = g.rng.random() < 0.5
    g.make_inputs(training)
    g.env = dict(zip((i.name for i in g.inputs), Program(tuple(g.inputs), (), ("0",), seed).make_inputs()))
    g.exact = {i.name for i in g.inputs}
    for _ in range(g.rng.randint(3, max_stmts)):
        g.step()
    tensors = [n for n in g.tensors() if n.startswith("v")]
    if not tensors:
        tensors = [g.inputs[0].name]

    def unused(n: str) -> bool:  # a value no later statement reads: an output, else it is dead code
        first = next(k for k, s in enumerate(g.stmts) if re.search(rf"^\s*{n} =", s, re.M))
        later = g.stmts[first + 1:]
        return not any(re.search(rf"\b{n}\b", s) for s in later)
    outputs = [tensors[-1]] + [n for n in tensors[:-1] if g.rng.random() < (0.8 if unused(n) else 0.2)]
    program = Program(tuple(g.inputs), tuple(g.stmts), tuple(outputs), seed)
    if program.requires_grad:
        try:
            execute(program.function(), program)
        except Exception:  # e.g. an in-place op on a value that backward needs: forward only
            inputs = tuple(dataclasses.replace(i, requires_grad=False) for i in program.inputs)
            program = dataclasses.replace(program, inputs=inputs)
    return program
