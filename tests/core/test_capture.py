"""Frame capture on the seed tutorials' examples and on the constructs the core supports."""
from __future__ import annotations

import collections

import pytest
import torch
import torch.nn.functional as F

import ember
from core_helpers import CountingBackend, no_fallback


def bar(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def f1(x, y):
    if x.sum() < 0:
        return -y
    return y


def test_f2_python_scalar_argument_recompiles_per_value():
    def f2(x, y):
        return x + y

    backend = CountingBackend()
    opt = ember.compile(f2, backend=backend)
    x = torch.randn(5, 5)
    with no_fallback():
        torch.testing.assert_close(opt(x, 3), x + 3)
        torch.testing.assert_close(opt(x, 3), x + 3)
        torch.testing.assert_close(opt(x, 4), x + 4)
        torch.testing.assert_close(opt(x, torch.ones(5, 5)), x + 1)
    assert backend.count == 3


def test_augmented_assignment_of_a_number_with_a_tensor():
    def f(x):
        total, scale = 0, 1.5
        total += x.sum()  # `total = 0` then `total += loss.detach()`: how losses are summed
        scale *= x
        return total, scale

    backend = CountingBackend()
    x = torch.randn(3)
    with no_fallback():
        total, scale = ember.compile(f, backend=backend)(x)
    torch.testing.assert_close(total, x.sum())
    torch.testing.assert_close(scale, 1.5 * x)
    assert backend.count == 1


def test_data_dependent_branch_gives_eager_results():
    backend = CountingBackend()
    opt = ember.compile(f1, backend=backend)
    x, y = torch.randn(5, 5), torch.randn(5, 5)
    with no_fallback():  # a graph break, not an eager fallback
        torch.testing.assert_close(opt(x.abs(), y), y)
        torch.testing.assert_close(opt(-x.abs(), y), -y)
    assert backend.count == 2  # x.sum() < 0, then -y on one branch (y alone needs no graph)


def test_graph_break_inside_try_block_keeps_capturing():
    def f(x):
        y = x * 2
        try:
            print("in try")
            return y + 1
        except ValueError:
            return x

    backend = CountingBackend()
    opt = ember.compile(f, backend=backend)
    with no_fallback():
        torch.testing.assert_close(opt(torch.ones(2)), torch.full((2,), 3.0))
    assert backend.count == 2


def test_fullgraph_error_names_file_line_and_reason():
    opt = ember.compile(bar, backend="eager", fullgraph=True)
    with pytest.raises(ember.Unsupported) as info:
        opt(torch.randn(10), torch.randn(10))
    message = str(info.value)
    assert "data-dependent branch" in message
    assert __file__ in message
    assert f"line {bar.__code__.co_firstlineno + 2}" in message
    assert "if b.sum() < 0:" in message


def test_nopython_alias_and_inlined_user_stack():
    def helper(t):
        print("side effect")
        return t

    def outer(t):
        return helper(t * 2) + 1

    opt = ember.optimize("eager", nopython=True)(outer)
    with pytest.raises(ember.Unsupported) as info:
        opt(torch.randn(3))
    message = str(info.value)
    assert "print()" in message
    assert "in outer" in message and "in helper" in message
    assert message.index("in outer") < message.index("in helper")  # outermost first


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(3)])
        self.norm = torch.nn.LayerNorm(8)
        self.register_buffer("offset", torch.ones(8))
        self.heads = torch.nn.ModuleDict({"a": torch.nn.Linear(8, 2), "b": torch.nn.Linear(8, 3)})

    @property
    def depth(self):
        return len(self.layers)

    def act(self, x):
        return F.gelu(x)

    def forward(self, x, scale: float = 1.0):
        for i, layer in enumerate(self.layers):
            x = self.act(layer(x)) + self.offset * i
        x = self.norm(x) * scale * self.depth
        return {name: head(x) for name, head in self.heads.items()}


def test_module_containers_buffers_properties_and_dict_output():
    mod = MLP()
    backend = CountingBackend()
    opt = ember.compile(mod, backend=backend)
    x = torch.randn(4, 8)
    with no_fallback():
        out = opt(x, scale=0.5)
    expected = mod(x, scale=0.5)
    assert out.keys() == expected.keys()
    for k in out:
        torch.testing.assert_close(out[k], expected[k])
    assert backend.count == 1


def test_sequential_and_super_forward():
    class Base(torch.nn.Module):
        def forward(self, x):
            return x * 2

    class Child(Base):
        def __init__(self):
            super().__init__()
            self.seq = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))

        def forward(self, x):
            return self.seq(super().forward(x))

    mod = Child()
    backend = CountingBackend()
    opt = ember.compile(mod, backend=backend)
    x = torch.randn(2, 3)
    with no_fallback():
        torch.testing.assert_close(opt(x), mod(x))
    assert backend.count == 1


def test_closures_defaults_varargs_kwargs_lambdas():
    def make_adder(k):
        def add(t, extra=0, *rest, **named):
            total = t + k + extra
            for r in rest:
                total = total + r
            for v in named.values():
                total = total * v
            return total

        return add

    adder = make_adder(2)

    def f(x):
        sq = lambda t: t * t  # noqa: E731
        return sq(adder(x, 1, x, x, scale=3))

    backend = CountingBackend()
    opt = ember.compile(f, backend=backend)
    x = torch.randn(3)
    with no_fallback():
        torch.testing.assert_close(opt(x), f(x))
    assert backend.count == 1


def test_control_flow_on_shapes_and_python_values():
    def f(x, n):
        ys = [x[i] * i for i in range(x.shape[0]) if i % 2 == 0]
        total = torch.zeros_like(x[0])
        k = 0
        while k < n:
            total = total + ys[k % len(ys)]
            k += 1
        if x.ndim == 2 and x.size(1) > 2:
            total = total.sum()
        return total, len(ys), x.shape

    backend = CountingBackend()
    opt = ember.compile(f, backend=backend)
    with no_fallback():
        for shape, n in [((4, 3), 3), ((5, 2), 2)]:
            x = torch.randn(*shape)
            got, expected = opt(x, n), f(x, n)
            torch.testing.assert_close(got[0], expected[0])
            assert got[1:] == expected[1:]
    assert backend.count == 2


Point = collections.namedtuple("Point", ["x", "y"])


def test_containers_namedtuples_unpacking_and_constructors():
    def f(p, xs, cfg):
        a, *rest = xs
        out = {"sum": p.x + p.y, "first": a, "n": len(rest)}
        buf = torch.arange(cfg["n"], dtype=torch.float32)
        out["scaled"] = buf * cfg["k"] + torch.ones(cfg["n"])
        return Point(out["sum"], out["scaled"]), out

    x = torch.randn(3)
    args = (Point(x, x * 2), [x, x + 1, x + 2], {"n": 3, "k": 2.0})
    backend = CountingBackend()
    opt = ember.compile(f, backend=backend)
    with no_fallback():
        got = opt(*args)
    expected = f(*args)
    assert isinstance(got[0], Point)
    torch.testing.assert_close(got, expected)
    assert backend.count == 1


def test_views_inplace_and_inputs_returned_unchanged():
    def f(x, y):
        v = x.view(2, 3).transpose(0, 1)
        w = v.clone()
        w.mul_(2)
        w[0] = 0
        return w.reshape(-1), y, None, 3

    x, y = torch.randn(6), torch.randn(2)
    opt = ember.compile(f, backend="eager")
    with no_fallback():
        got = opt(x, y)
    expected = f(x, y)
    torch.testing.assert_close(got[0], expected[0])
    assert got[1] is y and got[2] is None and got[3] == 3


def test_inplace_on_input_is_visible_to_the_caller():
    def f(x):
        x.add_(1)
        x[0] = -5
        return x * 2

    opt = ember.compile(f, backend="eager")
    a, b = torch.zeros(3), torch.zeros(3)
    with no_fallback():
        out_a = opt(a)
    out_b = f(b)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(out_a, out_b)


def test_dtypes_and_integer_tensors():
    def f(x):
        return (x * 2 + 1).sum(dim=-1), (x > 0).to(torch.int32)

    opt = ember.compile(f, backend="eager")
    with no_fallback():
        for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32):
            x = (torch.randn(3, 4) * 5).to(dtype)
            torch.testing.assert_close(opt(x), f(x))


def test_function_without_tensor_work_makes_no_graph():
    backend = CountingBackend()
    opt = ember.compile(lambda a, b: (a + b, [a] * 2), backend=backend)
    with no_fallback():
        assert opt(1, 2) == (3, [1, 1])
        assert opt(2, 2) == (4, [2, 2])
    assert backend.count == 0


def test_gradients_flow_through_the_eager_backend():
    mod = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    opt = ember.compile(mod, backend="eager")
    x = torch.randn(5, 4, requires_grad=True)
    opt(x).sum().backward()
    grads = [p.grad.clone() for p in mod.parameters()] + [x.grad.clone()]
    for p in mod.parameters():
        p.grad = None
    x.grad = None
    mod(x).sum().backward()
    for got, expected in zip(grads, [p.grad for p in mod.parameters()] + [x.grad]):
        torch.testing.assert_close(got, expected)


def test_one_list_passed_twice_aliases_as_in_python():
    def fn(x, a, b):
        a.append(2)
        return x + len(b), a is b

    opt = ember.compile(fn, backend="eager")
    with no_fallback():
        for same in (True, False, True):
            a = [1]
            b = a if same else [1]
            a2 = [1]
            b2 = a2 if same else [1]
            out, expected = opt(torch.ones(2), a, b), fn(torch.ones(2), a2, b2)
            torch.testing.assert_close(out[0], expected[0])
            assert out[1] == expected[1] and (a, b) == (a2, b2)


def test_fullgraph_code_that_raises_raises_its_own_exception():
    def f(x):
        s = frozenset((1, 2))
        s.add(3)  # AttributeError, as in eager
        return x + 1

    def g(x):
        return x + {}["missing"]

    with pytest.raises(AttributeError, match="'frozenset' object has no attribute 'add'"):
        ember.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    with pytest.raises(KeyError):
        ember.compile(g, backend="eager", fullgraph=True)(torch.ones(2))
