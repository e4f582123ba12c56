"""Behaviours of torch's ``test/dynamo/test_ctx_manager.py``, in our own programs: grad-mode, autocast,
profiler and user context managers (classes and ``@contextmanager`` generators) entered inside
captured code, across graph breaks, and leaving torch's global state as eager leaves it. CUDA
stream and event tests have no counterpart on the CPU."""
from __future__ import annotations

import contextlib
import math
import sys

import torch

from behaviour_harness import Suite

SUITE = S = Suite("test_ctx_manager")


def _x(*shape, grad=False):
    t = torch.linspace(-2, 3, math.prod(shape)).view(shape)
    return t.requires_grad_() if grad else t


def _no_grad_inside(a, b):
    x = a * 2
    with torch.no_grad():
        x = x - b
    return x + 3


def _set_grad_false_inside(a, b):
    x = a - 1
    with torch.set_grad_enabled(False):
        x = x * b
    return x * 2


def _enable_grad_inside(a, b):
    x = a + 5
    with torch.enable_grad():
        x = x / (b.abs() + 1)
    return x - 1


def _set_grad_true_branch(a, b):
    x = a * 3
    with torch.set_grad_enabled(True):
        if torch.is_grad_enabled():
            x = x + b
    return x * 2


for _label, _fn in [("no_grad", _no_grad_inside), ("set_grad_enabled_false", _set_grad_false_inside),
                    ("enable_grad", _enable_grad_inside), ("set_grad_enabled_true", _set_grad_true_branch)]:
    for _amb_label, _amb in [("under_no_grad", torch.no_grad), ("under_enable_grad", torch.enable_grad)]:
        S.std("test_no_grad", name=f"{_label}_block_{_amb_label}", around=_amb)(_fn)
        S.add("test_no_grad", f"{_label}_block_{_amb_label}_requires_grad", _fn,
              [lambda: (_x(3, 3, grad=True), _x(3, 3))], count=True, frames=1, around=_amb)


@S.case("test_grad_mode_guard", (_x(3, 4), _x(3, 4)), (_x(3, 4), _x(3, 4)), (_x(3, 4), _x(3, 4)),
        count=True, frames=2, fullgraph=False)
def set_grad_enabled_call_across_break(a, b):
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    a = a * 2
    a.tolist()
    out = a - b
    torch.set_grad_enabled(prev)
    return out


@S.case("test_nested_grad_mode_graph_break", (_x(3, 4).abs(),), (_x(3, 4).abs(),), count=True, frames=2,
        fullgraph=False)
def nested_grad_modes_with_breaks(x):
    before = torch.is_grad_enabled()
    with torch.set_grad_enabled(False):
        print("", end="")
        with torch.set_grad_enabled(True):
            x = torch.mul(x, 3)
            print("", end="")
            x = torch.sqrt(x)
            assert torch.is_grad_enabled()
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled() == before
    return x


@S.case("test_torch_profiler", lambda: (_x(2, 2, grad=True),), count=True, frames=2, fullgraph=False)
def profiler_contexts_with_break_inside(x):
    y = x ** 2
    with torch.profiler.profile():
        y = y * 3
        with torch.profiler.record_function("region"):
            z = y - 1
            z.tolist()
            z = z * 2
    return z


@S.case("test_autograd_profiler", lambda: (_x(2, 2, grad=True),), count=True, frames=2, fullgraph=False)
def autograd_profiler_contexts_with_break_inside(x):
    y = x + 4
    with torch.autograd.profiler.profile():
        y = y * y
        with torch.autograd.profiler.record_function("region"):
            z = y.sin()
            z.tolist()
            z = z + 1
    return z

def _profiler_branch(x):
    if torch.autograd._profiler_enabled():
        return x * 2
    return x - 2


S.add("test_autograd_profiler_enabled", "profiler_enabled_flag_off", _profiler_branch,
      [lambda: (_x(2, 2, grad=True),)], fullgraph=False)
S.add("test_autograd_profiler_enabled", "profiler_enabled_flag_on", _profiler_branch,
      [lambda: (_x(2, 2, grad=True),)], fullgraph=False, around=torch.autograd.profiler.profile)


@S.case("test_is_autocast_cpu_enabled", (_x(4, 4), _x(4, 4)))
def autocast_cpu_enabled_flag_inside(a, b):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        c = torch.mm(a, b)
        if torch.is_autocast_cpu_enabled():
            c = c * 2
    return c


class AutocastMM(torch.nn.Module):
    def forward(self, x):
        a = torch.rand((4, 4))
        b = torch.rand((4, 4))
        d = torch.rand((4, 4))
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            e = torch.mm(a, b)
            f = torch.mm(d, e)
        return f


S.add("test_autocast_cpu", "autocast_bfloat16_matmuls_in_module", None, [(torch.tensor([0.5]),)], module=AutocastMM,
      count=True)


class AutocastWithBreaks(torch.nn.Module):
    def forward(self, x):
        a = torch.rand((4, 4))
        b = torch.rand((4, 4))
        print("", end="")
        d = torch.rand((4, 4))
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            e = torch.mm(a, b)
            print("", end="")
            f = torch.mm(d, e)
        return f


S.add("test_autocast_cpu_graph_break", "autocast_with_breaks_inside_and_before", None, [(torch.tensor([0.5]),)],
      module=AutocastWithBreaks, fullgraph=False)


@S.case("test_autocast_cpu_graph_break_2", (torch.rand(4, 4),), fullgraph=False)
def autocast_region_with_a_break(x):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        x = torch.mm(x, x)
        print("", end="")
        x = torch.relu(x)
    return x


class NestedAutocastBreaks(torch.nn.Module):
    @staticmethod
    def mm_with_break(x, y):
        print("", end="")
        return torch.mm(x, y)

    def forward(self, x):
        a = torch.rand((4, 4))
        b = torch.rand((4, 4))
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            print("", end="")
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=False):
                print("", end="")
                g = torch.mm(a, b)
                with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                    print("", end="")
                    f1 = self.mm_with_break(a, b)
            f = self.mm_with_break(a, b)
            assert f.dtype == f1.dtype
        return f, g


S.add("test_autocast_cpu_graph_break_inner_fn", "nested_autocast_enabled_false_with_breaks", None,
      [(torch.tensor([0.5]),)], module=NestedAutocastBreaks, fullgraph=False)


class AutocastMethodBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.full((4, 4), 0.5, dtype=torch.bfloat16)

    def mm_plain(self, x, y):
        return torch.mm(x, y) + self.bias

    def mm_with_break(self, x, y):
        print("", end="")
        return torch.mm(x, y) + self.bias

    def forward(self, x):
        a = torch.rand((4, 4))
        b = torch.rand((4, 4))
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=False):
                g = torch.mm(a, b)
            f = self.mm_with_break(a, b)
            assert f[0][0] == self.mm_plain(a, b)[0][0]
        return f, g


S.add("test_autocast_graph_break_method", "autocast_method_with_break", None, [(torch.tensor([0.5]),)],
      module=AutocastMethodBreak, fullgraph=False)


# -- user context managers: classes and @contextmanager generators --------------------------------
class GradSwitch:
    def __init__(self, mode):
        self.prev = torch.is_grad_enabled()
        self.mode = mode

    def __enter__(self):
        torch._C._set_grad_enabled(self.mode)

    def __exit__(self, exc_type, exc, tb):
        torch._C._set_grad_enabled(self.prev)


@contextlib.contextmanager
def grad_switch(mode):
    prev = torch.is_grad_enabled()
    try:
        yield torch._C._set_grad_enabled(mode)
    finally:
        torch._C._set_grad_enabled(prev)


class GradSwitchBreaking(GradSwitch):
    def __enter__(self):
        print("", end="")
        super().__enter__()


@contextlib.contextmanager
def grad_switch_breaking(mode):
    prev = torch.is_grad_enabled()
    try:
        print("", end="")
        yield torch._C._set_grad_enabled(mode)
    finally:
        torch._C._set_grad_enabled(prev)


_KINDS = [("class", GradSwitch), ("generator", grad_switch)]
_BREAKING_KINDS = [("class", GradSwitchBreaking), ("generator", grad_switch_breaking)]


def _body_under(ctx):
    def fn(x):
        with ctx(False):
            if torch.is_grad_enabled():
                z = x + 100
            else:
                z = (x * 3).cos() - 1
        return z
    return fn


for _label, _ctx in _BREAKING_KINDS:
    S.add("test_generic_ctx_manager_with_graph_break", f"{_label}_manager_breaking_in_enter",
          _body_under(_ctx), [lambda: (_x(2, 3, grad=True),)], fullgraph=False)


@S.case("test_return_context_manager", (_x(2, 3),), post=lambda out, x: (type(out).__name__, out.mode))
def return_used_class_manager(x):
    cm = GradSwitch(False)
    with cm:
        pass
    return cm


@S.case("test_return_context_manager_with_graph_break", (_x(2, 3),), fullgraph=False,
        post=lambda out, x: (type(out).__name__, out.mode))
def return_class_manager_made_before_break(x):
    cm = GradSwitch(False)
    print("", end="")
    with cm:
        pass
    return cm


def _generic(ctx):
    def fn(x):
        with ctx(True):
            x = x * 2
            if torch.is_grad_enabled():
                x = x + 3
            x = torch.relu(x)
        return x - 1
    return fn


def _nested_generic(ctx):
    def fn(x):
        with ctx(True):
            x = x + 1
            if torch.is_grad_enabled():
                x = x * 2
            with ctx(False):
                if torch.is_grad_enabled():
                    x = x - 3
                x = x * 1.5
            x = torch.relu(x)
        return x - 1
    return fn


def _generic_break(ctx):
    def fn(x):
        with ctx(True):
            x = x - 1
            if torch.is_grad_enabled():
                x = x * 4
            print("", end="")
            x = torch.relu(x)
        return x + 1
    return fn


def _nested_generic_break(ctx):
    def fn(x):
        with ctx(True):
            x = x + 1
            if torch.is_grad_enabled():
                x = x * 2
            with ctx(False):
                if torch.is_grad_enabled():
                    x = x - 3
                print("", end="")
                x = x * 1.5
            x = torch.relu(x)
        return x - 1
    return fn


_AMBIENTS = [torch.no_grad, torch.enable_grad]
for _label, _ctx in _KINDS:
    S.add("test_generic_context_manager", f"{_label}_manager_switching_grad", _generic(_ctx),
          [(_x(2, 3),), (_x(2, 3),)], around=_AMBIENTS, count=True, frames=2)
    S.add("test_nested_generic_context_manager", f"nested_{_label}_managers", _nested_generic(_ctx),
          [(_x(2, 3),), (_x(2, 3),)], around=_AMBIENTS, count=True, frames=2)
    S.add("test_generic_context_manager_with_graph_break", f"{_label}_manager_with_break_inside",
          _generic_break(_ctx), [(_x(2, 3),), (_x(2, 3),)], around=_AMBIENTS, fullgraph=False)
    S.add("test_nested_generic_context_manager_with_graph_break", f"nested_{_label}_managers_with_break",
          _nested_generic_break(_ctx), [(_x(2, 3),), (_x(2, 3),)], around=_AMBIENTS, fullgraph=False)
    for _amb in _AMBIENTS:
        S.add("test_generic_context_manager", f"{_label}_manager_requires_grad_{_amb.__name__}",
              _generic(_ctx), [lambda: (_x(2, 3, grad=True),)], around=_amb, count=True, frames=1)


def _no_grad_then_break(z):
    with torch.no_grad():
        print("", end="")
        return torch.sin(z)


@S.case("test_graph_break_inlining_grad", lambda: (_x(3, 3, grad=True), _x(3, 3, grad=True), _x(3)),
        fullgraph=False, post=lambda out, x, y, z: (out, torch.autograd.grad(out.sum(), (x, y))))
def inlined_no_grad_function_with_break(x, y, z):
    a = torch.mm(x, y)
    z = _no_grad_then_break(z)
    return a


def _autocast_then_break(x, y):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        z = torch.mm(x, y)
        print("", end="")
        return torch.sin(z)


@S.case("test_graph_break_inlining_autocast", (torch.rand(3, 3), torch.rand(3, 3)), fullgraph=False)
def inlined_autocast_function_with_break(x, y):
    z = torch.mm(x, y)
    return z + _autocast_then_break(x, y)


@S.case("test_disable_saved_tensors_hooks", (torch.tensor(1.0),))
def disable_saved_tensors_hooks_decorator(z):
    @torch.autograd.graph.disable_saved_tensors_hooks("not here")
    def add(x, y):
        return x * y

    return add(torch.ones(2), torch.full((2,), 3.0))


@S.case("test_disable_saved_tensors_hooks_prev_disabled", (torch.tensor(1.0),),
        around=lambda: torch.autograd.graph.disable_saved_tensors_hooks("outer message"))
def disable_saved_tensors_hooks_inside_disabled(z):
    @torch.autograd.graph.disable_saved_tensors_hooks("inner message")
    def add(x, y):
        return x - y

    return add(torch.ones(2), torch.full((2,), 3.0))


@S.case("test_disable_saved_tensors_hooks_prev_disabled_nested", (torch.tensor(1.0),),
        around=lambda: torch.autograd.graph.disable_saved_tensors_hooks("outer message"))
def nested_disable_saved_tensors_hooks(z):
    @torch.autograd.graph.disable_saved_tensors_hooks("middle")
    def outer(x, y):
        @torch.autograd.graph.disable_saved_tensors_hooks("innermost")
        def inner(p, q):
            return p * q

        return inner(x, y) + x

    return outer(torch.ones(2), torch.full((2,), 3.0))


@S.case("test_disable_saved_tensors_hooks_graph_break", (torch.tensor(2.0),), fullgraph=False)
def disable_saved_tensors_hooks_with_break(x):
    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks"):
        y = x * 3
        print("", end="")
        return y + 2


# -- grad-mode objects as decorators --------------------------------------------------------------
def _wrap_with(wrapper, inverse, call, nested):
    def fn(x):
        with inverse():
            if nested:
                if call:
                    @wrapper()
                    def inner(v):
                        return v.cos()
                else:
                    @wrapper
                    def inner(v):
                        return v.cos()
            else:
                def inner(v):
                    return v.cos()
                inner = wrapper()(inner) if call else wrapper(inner)
            assert torch.is_grad_enabled() == (inverse is torch.enable_grad)
        with inverse():
            return inner(x)
    return fn


for _w, _inv in [(torch.enable_grad, torch.no_grad), (torch.no_grad, torch.enable_grad)]:
    for _call in (True, False):
        for _nested in (False, True):
            S.add("test_context_wrapping_grad_mode_nested_function_decorator" if _nested
                  else "test_context_wrapping_grad_mode_decorator",
                  f"{_w.__name__}_{'called' if _call else 'bare'}_{'decorator' if _nested else 'wrapper'}",
                  _wrap_with(_w, _inv, _call, _nested), [lambda: (torch.zeros(4, requires_grad=True),)],
                  post=lambda out, x: (out, out.requires_grad))


def _set_grad_wrapping(mode, decorator):
    def fn(x):
        with torch.set_grad_enabled(not mode):
            if decorator:
                @torch.set_grad_enabled(mode)
                def inner(v):
                    return v.sin() * 2
            else:
                def inner(v):
                    return v.sin() * 2
                inner = torch.set_grad_enabled(mode)(inner)
            assert torch.is_grad_enabled() == (not mode)
        with torch.set_grad_enabled(not mode):
            return inner(x)
    return fn


for _mode in (True, False):
    for _dec in (True, False):
        S.add("test_context_wrapping_set_grad_enabled_nested_function",
              f"set_grad_enabled_{str(_mode).lower()}_{'decorator' if _dec else 'wrapper'}",
              _set_grad_wrapping(_mode, _dec), [lambda: (torch.zeros(4, requires_grad=True),)],
              post=lambda out, x: (out, out.requires_grad))


# -- context objects made before a break, entered after it ---------------------------------------
@S.case("test_inactive_context_graph_break_local", (torch.zeros(4),), count=True, frames=2, fullgraph=False,
        post=lambda out, x: (out, out.requires_grad))
def grad_context_made_before_break(x):
    x = x + 1
    ctx = torch.set_grad_enabled(True)
    print("", end="")
    with ctx:
        x = x * 2
    return x


@S.case("test_inactive_context_graph_break_local_nullctx", (torch.zeros(4),), count=True, frames=2, fullgraph=False)
def nullcontext_made_before_break(x):
    x = x - 1
    ctx = contextlib.nullcontext()
    print("", end="")
    with ctx:
        x = x * 3
    return x


def _breaks_then_list():
    print("", end="")
    return [5, 6, 7]


@S.case("test_inactive_context_graph_break_local_nullctx2", (torch.zeros(4),), count=True, frames=2,
        fullgraph=False)
def nullcontext_then_inlined_call_with_break(x):
    x = x + 2
    ctx = contextlib.nullcontext()
    vals = _breaks_then_list()
    with ctx:
        x = x * vals[1]
    return x


def _pass_through_with_break(ctx):
    print("", end="")
    return ctx


@S.case("test_inactive_context_graph_break_stack", (torch.zeros(4),), fullgraph=False,
        post=lambda out, x: (out, out.requires_grad))
def grad_context_returned_through_break(x):
    x = x + 1
    ctx = _pass_through_with_break(torch.set_grad_enabled(True))
    with ctx:
        x = x * 5
    return x


def _use_ctx(x, ctx, p, q, unused):
    with ctx:
        return x * p * q


@S.case("test_inactive_context_graph_break_stack2", (torch.zeros(4) + 1,), count=True, frames=2, fullgraph=False,
        post=lambda out, x: (out, out.requires_grad))
def grad_context_on_stack_during_break(x):
    x = x + 1
    return _use_ctx(x, torch.set_grad_enabled(True), 2, 3, print("", end=""))


def _sdpa_math(x):
    return torch.nn.functional.scaled_dot_product_attention(x, x, x)


@S.case("test_sdpa_kernel_ctx_manager1", (torch.rand(2, 2, 3, 4),))
def sdpa_kernel_context(x):
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
        out = _sdpa_math(x) * 2
    return out


def _sdpa_after_break(x):
    print("", end="")
    return _sdpa_math(x)


@S.case("test_sdpa_kernel_ctx_manager2", (torch.rand(2, 2, 3, 4),), count=True, frames=3, fullgraph=False,
        atol=1e-5, rtol=1e-5)
def sdpa_kernel_context_with_break_inside(x):
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
        a = _sdpa_math(x)
        b = _sdpa_after_break(x)
        c = _sdpa_math(x)
    return a + b + c


@S.case("test_sdpa_kernel_ctx_manager3", (torch.rand(2, 2),), fullgraph=False)
def sdpa_kernel_two_backends_with_break(x):
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH,
                                         torch.nn.attention.SDPBackend.FLASH_ATTENTION]):
        x = x + 1
        print("", end="")
        backends = set(torch.nn.attention._cur_sdpa_kernel_backends())
        x = x * len(backends)
    return x


@S.case("test_torch_profiler_use_after_with_block", (torch.ones(2),), fullgraph=False)
def profiler_object_used_after_block(x):
    with torch.profiler.profile() as p:
        pass
    p.profiler.kineto_results.experimental_event_tree()
    return x + 1


# -- @contextmanager functions inlined ------------------------------------------------------------
@contextlib.contextmanager
def default_dtype_of(dtype):
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(dtype)
        yield
    finally:
        torch.set_default_dtype(old)


@S.case("test_ctx_basic0", ())
def contextmanager_sets_default_dtype():
    with default_dtype_of(torch.float64):
        x = torch.tensor([1.5, 2.0 + 1.0j])
    return x, torch.tensor([0.5])


@contextlib.contextmanager
def yields_sine(x):
    try:
        yield x.sin()
    finally:
        pass


@S.case("test_ctx_basic1", (torch.tensor([0.5, 1.0]),))
def contextmanager_yields_value_return_inside(x):
    with yields_sine(x) as y:
        return y.exp()


# frames=None below: torch 2.13 compiles another number of graphs than the test file's torch (its own
# count, run in the same test, stays the reference)


def _nonlocal_flow(finally_copies):
    """A @contextmanager made by a factory writes ``nonlocal`` cells of the enclosing scope."""
    cells = {"z": 1, "k": 2}

    def scope():
        z = cells["z"]
        k = cells["k"]

        def make_ctx():
            @contextlib.contextmanager
            def ctx(x):
                nonlocal z, k
                try:
                    if not finally_copies:
                        k = 50
                    yield x.sin()
                finally:
                    if finally_copies:
                        k = z

            return ctx

        def run(ctx, x):
            nonlocal z
            if finally_copies:
                z = 70
            with ctx(x) as y:
                if not finally_copies:
                    z = k
                out = y.cos()
            return out

        def fn(x):
            return run(make_ctx(), x)

        def read():
            return z, k

        return fn, read

    return scope()


for _i, _copies in enumerate((False, True)):
    _fn, _read = _nonlocal_flow(_copies)
    S.add(f"test_change_parent_nonlocal_{_i}", f"contextmanager_writes_enclosing_nonlocals_{_i}", _fn,
          [(torch.tensor([0.5]),)], state=_read)

z_glb = 0
k_glb = 0


def _reset_globals():
    global z_glb, k_glb
    z_glb, k_glb = 0, 0


@contextlib.contextmanager
def _sets_global_k(x):
    global k_glb
    try:
        k_glb = 40
        yield x.sin()
    finally:
        pass


def _global_ctx_factory():
    return _sets_global_k


@S.case("test_change_parent_global_0", (torch.tensor([0.5]),), setup=_reset_globals, state=lambda: (z_glb, k_glb))
def contextmanager_writes_global_read_in_body(x):
    global z_glb
    with _global_ctx_factory()(x) as y:
        z_glb = k_glb
        return y.cos()


@contextlib.contextmanager
def _finally_copies_global(x):
    global k_glb
    try:
        yield x.sin()
    finally:
        k_glb = z_glb


@S.case("test_change_parent_global_1", (torch.tensor([0.5]),), setup=_reset_globals, state=lambda: (z_glb, k_glb))
def contextmanager_finally_reads_updated_global(x):
    global z_glb
    z_glb = 90
    with _finally_copies_global(x) as y:
        return y.cos()


_count_a = 0
_count_b = 0


def _reset_counts():
    global _count_a, _count_b
    _count_a, _count_b = 0, 0


@contextlib.contextmanager
def _bump_two_globals():
    global _count_a, _count_b
    try:
        _count_a += 1
        _count_b += 2
        yield 3
    finally:
        pass


@S.case("test_globals_change_in_other_file", (torch.ones(4),), setup=_reset_counts,
        state=lambda: (_count_a, _count_b))
def contextmanager_global_updates_seen_in_body(x):
    with _bump_two_globals():
        pass
    with _bump_two_globals() as k:
        return x * k * (_count_a + _count_b)


def _ctx_factory_arg():
    @contextlib.contextmanager
    def ctx(x):
        try:
            yield x.sin()
        finally:
            pass
    return ctx


@S.case("test_change_parent_0", (torch.tensor([0.5]),))
def contextmanager_from_factory_called_in_helper(x):
    def run(ctx, v):
        with ctx(v) as y:
            return y.cos()
    return run(_ctx_factory_arg(), x)


@S.case("test_change_parent_1", (torch.tensor([0.5]),))
def contextmanager_closing_over_tensor(x):
    def make(v):
        @contextlib.contextmanager
        def ctx():
            try:
                yield v.sin()
            finally:
                pass
        return ctx

    def run(ctx):
        with ctx() as y:
            return y.cos()

    return run(make(x))


@contextlib.contextmanager
def _tan_with_break(x):
    y = x.tan()
    try:
        print("", end="")
        yield y
    finally:
        pass


@S.case("test_graph_break_inside_ctx", (_x(2) * 0.3,), count=True, frames=0, fullgraph=False)
def break_inside_contextmanager_setup(x):
    y = x.sin()
    with _tan_with_break(x) as z:
        y = y + z.neg()
    y = y + x.cos()
    return y


_LOG: list = []


@contextlib.contextmanager
def _logging_break(x):
    y = x.tan()
    try:
        _LOG.append(x.sin())
        print("", end="")
        yield y
    finally:
        _LOG.append(x.cos())


@S.case("test_graph_break_inside_ctx_with_side_effects", (_x(2) * 0.3,), count=True, frames=0, fullgraph=False,
        setup=_LOG.clear, state=lambda: list(_LOG))
def break_inside_contextmanager_with_side_effects(x):
    y = x.sin()
    with _logging_break(x) as z:
        y = y + z.neg()
    return y + x.cos()


def _helper_with_breaking_ctx(x):
    with _tan_with_break(x) as z:
        return z.neg()


@S.case("test_graph_break_inside_ctx_1", (_x(2) * 0.3,), count=True, frames=2, fullgraph=False)
def breaking_contextmanager_inside_helper(x):
    return x.sin() + _helper_with_breaking_ctx(x) + x.cos()


@contextlib.contextmanager
def _cos_after_break(x):
    try:
        print("", end="")
        yield x.cos()
    finally:
        pass


def _neg_plus_acos(x):
    return x.neg() + x.acos()


@S.case("test_graph_break_inside_ctx_2", (_x(2) * 0.3,), count=True, frames=1, fullgraph=False)
def break_in_contextmanager_then_inlined_body(x):
    y = x.sin()
    with _cos_after_break(x) as z:
        y = y + _neg_plus_acos(z)
    y = y + y.tan()
    return y


@contextlib.contextmanager
def _plus_one(x):
    try:
        yield x + 1
    finally:
        pass


_FIN_LOG: list = []


@contextlib.contextmanager
def _break_in_finally(x):
    try:
        _FIN_LOG.append(x)
        yield x.sin()
    finally:
        print("", end="")
        _FIN_LOG.append(x.cos())


@S.case("test_graph_break_in_finally", (torch.tensor([1.0]),), count=True, frames=0, fullgraph=False,
        setup=_FIN_LOG.clear, state=lambda: list(_FIN_LOG))
def manual_enter_exit_with_break_in_finally(x):
    ctx = _break_in_finally(x)
    y = ctx.__enter__()
    ctx.__exit__(None, None, None)
    return y


@contextlib.contextmanager
def _break_before_yield(x):
    try:
        print("", end="")
        yield x + 1
    finally:
        pass


@S.case("test_graph_break_inside___enter__", (torch.tensor([1.0]),), count=True, frames=0, fullgraph=False)
def manual_enter_that_breaks(x):
    ctx = _break_before_yield(x)
    y = ctx.__enter__()
    ctx.__exit__(None, None, None)
    return y


@S.case("test_graph_break_after___enter__", (torch.tensor([1.0]),), count=True, frames=None, fullgraph=False)
def break_between_manual_enter_and_exit(x):
    ctx = _plus_one(x)
    try:
        y = ctx.__enter__()
        print("", end="")
    finally:
        ctx.__exit__(None, None, None)
    return y


@S.case("test_graph_break_before_and_after___enter__", (torch.tensor([1.0]),), count=True, frames=None,
        fullgraph=False)
def breaks_around_manual_enter(x):
    ctx = _plus_one(x)
    try:
        print("", end="")
        y = ctx.__enter__()
        print("", end="")
    finally:
        ctx.__exit__(None, None, None)
    return y


@S.case("test_graph_break_before___enter___and_disable___exit__", (torch.tensor([1.0]),), count=True, frames=None,
        fullgraph=False)
def manual_exit_in_disabled_function(x):
    ctx = _plus_one(x)
    try:
        print("", end="")
        y = ctx.__enter__()
    finally:
        @torch.compiler.disable
        def leave():
            ctx.__exit__(None, None, None)

        leave()
    return y


def _cos_plus_one_ctx(log):
    @contextlib.contextmanager
    def ctx(x):
        try:
            log.append(x.sin())
            yield x.cos() + 1
        finally:
            log.append(x.cos())
    return ctx


_ARG_LOG: list = []
_arg_ctx = _cos_plus_one_ctx(_ARG_LOG)


@S.case("test_contextmanager_as_argument", lambda: (torch.tensor([1.0]), _arg_ctx(torch.tensor([1.0]))),
        count=True, frames=None, fullgraph=False, setup=_ARG_LOG.clear, state=lambda: list(_ARG_LOG))
def enter_and_exit_contextmanager_argument(x, ctx):
    y = ctx.__enter__()
    ctx.__exit__(None, None, None)
    return x * y


@S.case("test_contextmanager_as_argument_only___enter__", lambda: (torch.tensor([1.0]), _arg_ctx(torch.tensor([1.0]))),
        count=True, frames=None, fullgraph=False, setup=_ARG_LOG.clear, state=lambda: list(_ARG_LOG))
def enter_only_contextmanager_argument(x, ctx):
    y = ctx.__enter__()
    return x - y


def _entered(x):
    ctx = _arg_ctx(x)
    ctx.__enter__()
    return ctx


@S.case("test_contextmanager_as_argument_only___exit__", lambda: (torch.tensor([1.0]), _entered(torch.tensor([1.0]))),
        count=True, frames=1, fullgraph=False, setup=_ARG_LOG.clear, state=lambda: list(_ARG_LOG))
def exit_only_contextmanager_argument(x, ctx):
    ctx.__exit__(None, None, None)
    return x.sin()


def _entered_plain(x):
    ctx = _plus_one(x)
    ctx.__enter__()
    return ctx


@S.case("test_advanced_contextmanager_as_argument", lambda: (torch.tensor([1.0]), _entered_plain(torch.tensor([1.0]))),
        fullgraph=False)
def exit_of_entered_contextmanager_argument(x, ctx):
    ctx.__exit__(None, None, None)
    return x * 4


@S.case("test_advanced_contextmanager_as_argument_error",
        lambda: (torch.tensor([1.0]), _entered_plain(torch.tensor([1.0]))), fullgraph=False)
def reenter_entered_contextmanager_raises(x, ctx):
    y = ctx.__enter__()
    ctx.__exit__(None, None, None)
    return y


@torch.compiler.disable
def _disabled_with_ctx(x):
    with _plus_one(x) as y:
        return y


@S.case("test_disable_ctx_manager", (torch.tensor([1.0]),), count=True, frames=0, fullgraph=False)
def contextmanager_inside_disabled_function(x):
    return _disabled_with_ctx(x)


@S.case("test_graph_break_and_disable___enter__", (torch.tensor([1.0]),), count=True, frames=None, fullgraph=False)
def manual_enter_in_disabled_function_after_break(x):
    ctx = _plus_one(x)
    try:
        print("", end="")

        @torch.compiler.disable
        def enter():
            return ctx.__enter__()

        y = enter()
    finally:
        ctx.__exit__(None, None, None)
    return y


@S.case("test_disable_trace_contextmanager", (_x(2) * 0.3,), count=True, frames=None, fullgraph=False, dynamic=False,
        config={"enable_trace_contextlib": False})
def contextmanager_not_traced_when_disabled(x):
    y = x.sin()
    with yields_sine(x) as z:
        y = y + _neg_plus_acos(z)
    y = y + y.tan()
    return y


def _stdlib_ctx(kind):
    def fn(t):
        y = t.sin()
        if kind == "suppress":
            ctx = contextlib.suppress(ValueError)
        elif kind == "stdout":
            ctx = contextlib.redirect_stdout(sys.stderr)
        else:
            ctx = contextlib.redirect_stderr(sys.stdout)
        with ctx:
            y = y + t.cos()
        return y.tan()
    return fn


for _kind in ("suppress", "stdout", "stderr"):
    S.add("test_contextlib_suppress", f"contextlib_{_kind}_block", _stdlib_ctx(_kind), [(_x(2) * 0.2,)],
          fullgraph=False)


@S.case("test_contextlib_nullcontext", (_x(2),))
def nullcontext_block_fullgraph(t):
    with contextlib.nullcontext():
        return t.sin()


test_behaviour = S.pytest_function()
