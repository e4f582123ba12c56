"""Graph breaks inside ``with`` and ``try`` blocks (issue 24 item 1).

Each case breaks (print, a numpy call, ``.item()`` feeding Python) inside a block and checks,
against eager: the results (values, requires_grad), the global state seen by the code that
runs in Python at the break and left after the call, the order in which a user context
manager is entered and left, and that ember captured graphs instead of running the whole
function eagerly.
"""
from __future__ import annotations

import contextlib
import io
import logging
import warnings

import numpy as np
import pytest
import torch
import transformers

import ember
from core_helpers import CountingBackend

LOG: list[object] = []


def state() -> tuple:
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.is_autocast_enabled("cpu"),
            torch.get_autocast_dtype("cpu"))


def observe(tag: str) -> None:
    """Runs in Python at the break: records the state it sees."""
    LOG.append((tag, state()))


@contextlib.contextmanager
def user_ctx(tag):
    LOG.append(f"enter {tag}")
    try:
        yield tag
    finally:
        LOG.append(f"exit {tag}")


CONTEXTS = {
    "no_grad": torch.no_grad,
    "enable_grad": torch.enable_grad,
    "set_grad_enabled": lambda: torch.set_grad_enabled(False),
    "inference_mode": torch.inference_mode,
    "record_function": lambda: torch.autograd.profiler.record_function("x"),
    "autocast": lambda: torch.autocast("cpu", dtype=torch.bfloat16),
    "user_contextmanager": lambda: user_ctx("u"),
}


BREAKS = ("print", "numpy", "item")


def make_fn(ctx_name, brk_name):
    make_ctx = CONTEXTS[ctx_name]
    # the break is written inline (not in a helper) so that it happens in the compiled frame
    if brk_name == "print":
        def fn(x, w):
            y = x @ w
            with make_ctx():
                z = y @ w
                print("inside the block", z.shape)
                observe("print")
                z = (z @ w).relu()
            return z.float() * 2, z.requires_grad, z.dtype
    elif brk_name == "numpy":
        def fn(x, w):
            y = x @ w
            with make_ctx():
                z = y @ w
                observe(float(np.abs(z.detach().float().numpy()).sum() > 0))
                z = (z @ w).relu()
            return z.float() * 2, z.requires_grad, z.dtype
    else:
        def fn(x, w):
            y = x @ w
            with make_ctx():
                z = y @ w
                s = z.float().sum().item()
                z = (z @ w).relu() + (1.0 if s > 0 else -1.0)
            return z.float() * 2, z.requires_grad, z.dtype
    return fn


def check(fn, *args, min_graphs=1, atol=None, rtol=None, calls=2, fallback=None):
    """Eager vs compiled, twice (the second call hits the cache); returns the backend.
    ``fallback``: a fragment of the one eager-fallback warning the case may give."""
    backend = CountingBackend()
    compiled = ember.compile(fn, backend=backend)
    for _ in range(calls):
        LOG.clear()
        before = state()
        eager_exc = compiled_exc = None
        try:
            expected = fn(*args)
        except Exception as exc:  # noqa: BLE001 - compared with the compiled call's
            eager_exc = exc
        eager_log, eager_state = list(LOG), state()
        LOG.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                actual = compiled(*args)
            except Exception as exc:  # noqa: BLE001
                compiled_exc = exc
        messages = [str(w.message) for w in caught if str(w.message).startswith("ember:")]
        assert all(fallback is not None and fallback in m for m in messages), messages
        assert state() == eager_state == before
        assert LOG == eager_log
        if eager_exc is not None:
            assert type(compiled_exc) is type(eager_exc) and str(compiled_exc) == str(eager_exc)
            continue
        assert compiled_exc is None, compiled_exc
        for e, a in zip(expected if isinstance(expected, tuple) else (expected,),
                        actual if isinstance(actual, tuple) else (actual,)):
            if isinstance(e, torch.Tensor):
                assert a.requires_grad == e.requires_grad and a.dtype == e.dtype
                torch.testing.assert_close(a, e, atol=atol, rtol=rtol)
            else:
                assert a == e
    assert backend.count >= min_graphs
    return backend


@pytest.fixture
def break_records():
    records: list[str] = []

    class Handler(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("ember.graph_breaks")
    handler, level = Handler(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.mark.parametrize("brk", BREAKS)
@pytest.mark.parametrize("ctx", list(CONTEXTS))
def test_break_inside_with_block(ctx, brk, break_records):
    fn = make_fn(ctx, brk)
    x = torch.randn(4, 4, requires_grad=True)
    w = torch.randn(4, 4)
    tol = dict(atol=0.1, rtol=0.05) if ctx == "autocast" else {}
    check(fn, x, w, min_graphs=2, **tol)
    assert any("graph break" in r for r in break_records)
    assert not any("runs eagerly" in r for r in break_records), break_records


def test_break_inside_try_and_handler_catches_a_later_exception():
    def fn(x):
        y = x * 2
        try:
            z = y + 1
            print("inside try")
            if z.shape[0] == 3:
                raise ValueError("after the break")
            z = z * 5
        except ValueError as e:
            LOG.append(str(e))
            z = z - 100
        finally:
            LOG.append("finally")
            z = z + 0.5
        return z

    check(fn, torch.randn(3, requires_grad=True), min_graphs=2)
    check(fn, torch.randn(4, requires_grad=True), min_graphs=2)


def test_exception_raised_by_the_breaking_instruction_reaches_the_handler():
    def fn(x):
        y = x * 2
        try:
            with torch.no_grad():
                z = y * 3
                np.asarray(z.numpy()).reshape(7)  # raises ValueError in Python
            z = z + 1
        except ValueError:
            observe("handler")
            z = y - 1
        finally:
            observe("finally")
        return z * 2

    check(fn, torch.randn(3, requires_grad=True), min_graphs=2)


def test_exception_leaving_a_with_block_after_a_break_restores_state():
    def fn(x):
        with torch.no_grad():
            y = x * 2
            print("before raising")
            if y.shape[0] == 3:
                raise RuntimeError("leaves the block")
        return y

    # the exception leaves the captured code: the part after the break runs in Python
    check(fn, torch.randn(3, requires_grad=True), min_graphs=1, fallback="raised in captured code")
    check(fn, torch.randn(2, requires_grad=True), min_graphs=1, fallback="raised in captured code")


def test_nested_with_blocks():
    def fn(x):
        with user_ctx("outer"):
            with torch.enable_grad():
                y = x * 2
                with torch.no_grad():
                    z = y * 3
                    print("innermost block")
                    observe("innermost")
                    z = z + 1
                w = y * z
                observe("middle")
        return w, w.requires_grad

    check(fn, torch.randn(3, requires_grad=True), min_graphs=2)
    with torch.no_grad():
        check(fn, torch.randn(3, requires_grad=True), min_graphs=2)


def test_bert_eval_under_no_grad_inside_the_compiled_function():
    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=99)
    model = transformers.BertModel(config).eval()

    def evaluate(model, input_ids, attention_mask):
        with torch.no_grad():
            out = model(input_ids=input_ids, attention_mask=attention_mask)
            score = out.last_hidden_state.mean().item()  # feeds Python: a break inside the block
            hidden = out.last_hidden_state * (2.0 if score > 0 else -2.0)
        return hidden, out.pooler_output

    ids = torch.randint(0, 99, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 5:] = 0
    check(evaluate, model, ids, mask, min_graphs=2)


def test_objects_made_at_a_break_do_not_recompile():
    def fn(x):
        y = x * 2
        with io.StringIO("12") as fh:  # entered in Python; fh and its methods are new every call
            n = int(fh.read())
            y = y * n
        # a context written in Python is inlined (user_ctx's appends to a global list would recompile
        # on every call, as they do under torch.compile: the list's length is guarded)
        with contextlib.nullcontext("v") as tag:
            y = y + len(tag)
        return y + 1

    backend = CountingBackend()
    compiled = ember.compile(fn, backend=backend)
    for i in range(4):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.testing.assert_close(compiled(torch.ones(3)), fn(torch.ones(3)))
        assert not [str(w.message) for w in caught if str(w.message).startswith("ember:")]
        if i == 0:
            first = backend.count, entries(compiled.__ember__)
    assert (backend.count, entries(compiled.__ember__)) == first and first[0] > 0


def entries(cf) -> int:
    """Cache entries of a compiled function and of its resume functions (one per compile)."""
    return len(cf.entries) + sum(entries(r.__ember__) for r in cf.resumes.values())


@pytest.mark.parametrize("make", [lambda: torch.autocast("cpu", torch.bfloat16), torch.no_grad],
                         ids=["autocast", "no_grad"])
def test_a_context_object_held_in_a_local_at_a_later_break(make):
    """``ctx = torch.autocast(...) if amp else ...; with ctx: loss = ...; loss.backward()``: the
    context object is still a local at the break, so the code after the graph makes it again."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 1)
    x = torch.randn(3, 4)

    def step(x):
        ctx = make()
        with ctx:
            loss = lin(x).float().sum()
        if loss.requires_grad:
            loss.backward()
        return loss.detach(), ctx

    expected, _ = step(x)
    want = [p.grad.clone() if p.grad is not None else None for p in lin.parameters()]
    lin.zero_grad(set_to_none=True)
    backend = CountingBackend()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, ctx = ember.compile(step, backend=backend)(x)
    assert not [str(w.message) for w in caught if str(w.message).startswith("ember:")]  # no fallback
    assert type(ctx) is type(make()) and backend.count >= 1
    torch.testing.assert_close(got, expected)
    for p, w in zip(lin.parameters(), want):
        assert (p.grad is None) == (w is None)
        if w is not None:
            torch.testing.assert_close(p.grad, w)
