"""Graph breaks: the graph so far runs, Python runs the breaking instruction, a resume function
continues (compiled lazily, with its own guards)."""
from __future__ import annotations

import scipy.fft
import torch

import ember
from core_helpers import CountingBackend

COUNTER = 0


def bar(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def test_seed_bar_yields_exactly_three_graphs():
    backend = CountingBackend()
    opt_bar = ember.compile(bar, backend=backend)
    inp1, inp2 = torch.randn(10), torch.randn(10)
    torch.testing.assert_close(opt_bar(inp1, inp2), bar(inp1, inp2))
    torch.testing.assert_close(opt_bar(inp1, -inp2), bar(inp1, -inp2))
    torch.testing.assert_close(opt_bar(inp1, inp2), bar(inp1, inp2))
    assert backend.count == 3
    ops = sorted(tuple(backend.ops(i)) for i in range(3))
    assert ops == sorted([("abs", "add", "truediv", "sum", "lt"), ("mul", "mul"), ("mul",)])


def test_seed_f1_and_f3_match_eager():
    def f1(x, y):
        if x.sum() < 0:
            return -y
        return y

    def f3(x):
        x = x * 2
        x = scipy.fft.dct(x.numpy())
        x = torch.from_numpy(x)
        x = x * 2
        return x

    o1, o3 = ember.compile(f1, backend="eager"), ember.compile(f3, backend="eager")
    for _ in range(2):
        x, y = torch.randn(5, 5), torch.randn(5, 5)
        torch.testing.assert_close(o1(x, y), f1(x, y))
        torch.testing.assert_close(o1(-x, y), f1(-x, y))
        torch.testing.assert_close(o3(x), f3(x))


def test_print_in_a_loop_gives_eager_results_every_iteration(capsys):
    def loop(x, n):
        for i in range(n):
            print("iteration", i)
            x = x * 2 + i
        return x

    opt = ember.compile(loop, backend="eager")
    x = torch.randn(3)
    torch.testing.assert_close(opt(x, 3), loop(x, 3))
    out = capsys.readouterr().out
    assert out.count("iteration") == 6


def test_break_inside_inlined_call_compiles_the_callee_on_its_own():
    backend = CountingBackend()

    def helper(t):
        t = t.sin()
        print("inside helper")
        return t.cos()

    def outer(t):
        return helper(t + 1) * 3

    opt = ember.compile(outer, backend=backend)
    x = torch.randn(4)
    torch.testing.assert_close(opt(x), outer(x))
    captured = sorted(tuple(backend.ops(i)) for i in range(backend.count))
    assert ("sin",) in captured and ("cos",) in captured  # the callee's tensor work is in graphs
    assert ("add",) in captured and ("mul",) in captured


def test_item_feeding_python():
    def f(x):
        n = int(x.sum().item() > 0)
        return x * (n + 1)

    opt = ember.compile(f, backend="eager")
    for x in (torch.ones(3), -torch.ones(3)):
        torch.testing.assert_close(opt(x), f(x))


def test_side_effects_on_objects_lists_and_globals():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.count = 0

        def forward(self, x, log):
            self.count += 1
            log.append(x.shape[0])
            global COUNTER
            COUNTER += 1
            return x * self.count

    mod = Counter()
    opt = ember.compile(mod, backend="eager")
    log: list = []
    x = torch.randn(2)
    torch.testing.assert_close(opt(x, log), x * 1)
    torch.testing.assert_close(opt(x, log), x * 2)
    assert mod.count == 2 and log == [2, 2] and COUNTER >= 2


def test_fullgraph_refuses_to_break():
    opt = ember.compile(bar, backend="eager", fullgraph=True)
    try:
        opt(torch.randn(3), torch.randn(3))
    except ember.Unsupported as exc:
        assert "if b.sum() < 0:" in str(exc)
    else:
        raise AssertionError("fullgraph=True did not raise")


def test_generators_and_inference_mode_are_captured_whole():
    def f(xs, y):
        total = sum(x * 2 for x in xs)
        return total, tuple(v + 1 for v in (y, y))

    opt = ember.compile(f, backend="eager", fullgraph=True)
    xs, y = [torch.randn(2) for _ in range(3)], torch.randn(2)
    torch.testing.assert_close(opt(xs, y), f(xs, y))
    with torch.inference_mode():
        torch.testing.assert_close(opt(xs, y), f(xs, y))


def test_autocast_block_and_autocast_state_guard():
    def f(x, w):
        y = x @ w
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = y @ w
            q = z.relu()
        return q.float() + 1, z.dtype

    opt = ember.compile(f, backend="eager")
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    got, expected = opt(x, w), f(x, w)
    assert got[1] == expected[1] == torch.bfloat16
    torch.testing.assert_close(got[0], expected[0], rtol=0, atol=0)

    g = ember.compile(lambda t: t @ t, backend="eager")
    assert g(x).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert g(x).dtype == torch.bfloat16  # autocast state is guarded: a new entry
    assert g(x).dtype == torch.float32


def test_torch_state_setters_are_never_run_only_at_capture_time():
    def f(x):
        torch.manual_seed(3)
        return x + torch.rand(2)

    opt = ember.compile(f, backend="eager")
    x = torch.zeros(2)
    torch.testing.assert_close(opt(x), f(x))
    torch.testing.assert_close(opt(x), f(x))


def test_local_read_from_a_dict_entry_the_break_removes():
    # HF's can_return_tuple: `flag = kwargs.pop("return_dict", ...)`, then a break inside the
    # call. The resume function's `flag` was read as kwargs['return_dict'] after the replay of
    # the pop had removed it: KeyError in the user's program.
    def inner(x, **kw):
        y = x + 1
        print("a break")
        return y * 2

    def wrapper(x, **kwargs):
        flag = kwargs.pop("return_dict", True)
        out = inner(x, **kwargs)
        return out if flag else (out,)

    compiled = ember.compile(wrapper, backend="eager")
    x = torch.randn(3)
    for flag in (True, False, True):
        kwargs = {"return_dict": flag, "other": 1}
        torch.testing.assert_close(compiled(x, **kwargs), wrapper(x, **dict(kwargs)))
        assert kwargs == {"return_dict": flag, "other": 1}  # the caller's dict is not touched
