"""torch.optim's own ``step()`` compiled by the inductor backend, whose kernels write the new
parameters and state into the tensors themselves (``ember_inductor.mutation``): after each of
several steps the parameters and every state tensor equal eager's, for the foreach and the
for-loop forms and a tensor learning rate changed by ``LambdaLR``; the step's graphs write no
input back through ember_aot; BatchNorm's running statistics in a training model, and updated
under ``no_grad``, as eager's. A counting backend checks the graphs compiled."""
from __future__ import annotations

import copy
import logging

import pytest
import torch

import ember
from ember_inductor.backend import inductor

SHAPES = [(16, 8), (8,), (4, 3, 3, 3), (1,)]


@pytest.fixture(autouse=True)
def compiled_not_eager(caplog):
    """Fail if ember or ember_aot ran a graph eagerly (a warning) instead of compiling it."""
    caplog.set_level(logging.WARNING, logger="ember")
    yield
    bad = [r.getMessage() for r in caplog.records if r.name.startswith("ember") and r.levelno >= logging.WARNING]
    assert not bad, bad

OPTIMIZERS = {
    "AdamW": lambda ps, fe: torch.optim.AdamW(ps, lr=1e-2, foreach=fe),
    "Adam": lambda ps, fe: torch.optim.Adam(ps, lr=1e-2, foreach=fe, amsgrad=True),
    "SGD-momentum": lambda ps, fe: torch.optim.SGD(ps, lr=1e-2, momentum=0.9, nesterov=True, foreach=fe),
    "RMSprop": lambda ps, fe: torch.optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True, foreach=fe),
    "Adagrad": lambda ps, fe: torch.optim.Adagrad(ps, lr=1e-2, foreach=fe),
}


class Counting:
    """The inductor backend, counting the graphs it compiles and keeping what it returns."""

    def __init__(self) -> None:
        self.compiled: list = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> object:
        self.compiled.append(inductor(gm, example_inputs, options={"eager_fallback": False, "strict": True}))
        return self.compiled[-1]

    def plans(self) -> list:
        return [p for c in self.compiled for p in c.plans.values()]


def _params(seed: int) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(s, generator=g)) for s in SHAPES]


def _set_grads(params: list, step: int) -> None:
    g = torch.Generator().manual_seed(100 + step)
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)


def _assert_same_state(opt, ref_opt) -> None:
    for group, ref_group in zip(opt.param_groups, ref_opt.param_groups):
        for p, q in zip(group["params"], ref_group["params"]):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
            state, ref_state = opt.state[p], ref_opt.state[q]
            assert state.keys() == ref_state.keys()
            for k in state:
                torch.testing.assert_close(state[k], ref_state[k], rtol=1e-5, atol=1e-6, msg=k)


def _run(make, steps: int = 4, sched: bool = False) -> Counting:
    params, ref_params = _params(0), _params(0)
    opt, ref_opt = make(params), make(ref_params)
    scheds = [torch.optim.lr_scheduler.LambdaLR(o, lambda s: 1.0 / (1 + s)) for o in (opt, ref_opt)] if sched else []
    backend = Counting()
    step = ember.compile(lambda: opt.step(), backend=backend)
    for k in range(steps):
        _set_grads(params, k)
        _set_grads(ref_params, k)
        step()
        ref_opt.step()
        for s in scheds:
            s.step()
        _assert_same_state(opt, ref_opt)
    return backend


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "for-loop"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_steps_equal_eager(name: str, foreach: bool) -> None:
    backend = _run(lambda ps: OPTIMIZERS[name](ps, foreach))
    plans = backend.plans()
    assert plans and len(backend.compiled) <= 2, len(backend.compiled)  # the first step's state init, then the step
    step_plan = plans[-1]
    assert step_plan.mutated_inputs == [] and step_plan.inputs_mutated_in_graph  # written by the kernels


def test_tensor_learning_rate_with_lambda_lr() -> None:
    make = lambda ps: torch.optim.AdamW(ps, lr=torch.tensor(1e-2), foreach=False)  # noqa: E731
    backend = _run(make, steps=5, sched=True)
    assert len(backend.compiled) <= 2, len(backend.compiled)  # the rate is an input: no graph per rate


def _bn_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))


def _assert_same_buffers(model, ref) -> None:
    for (name, a), b in zip(model.named_buffers(), ref.buffers()):
        torch.testing.assert_close(a, b, msg=name)


def test_batch_norm_running_statistics_in_training() -> None:
    model = _bn_model()
    ref = copy.deepcopy(model)
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref))
    backend = Counting()

    def train(m, o, x):
        loss = m(x).square().mean()
        loss.backward()
        o.step()
        o.zero_grad()
        return loss

    compiled = ember.compile(train, backend=backend)
    for k in range(3):
        x = torch.randn(5, 3, 8, 8, generator=torch.Generator().manual_seed(k))
        torch.testing.assert_close(compiled(model, opt, x), train(ref, ref_opt, x))
        _assert_same_buffers(model, ref)
        for a, b in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(a, b)


def test_batch_norm_statistics_updated_without_grad() -> None:
    model = _bn_model()
    ref = copy.deepcopy(model)
    backend = Counting()
    compiled = ember.compile(model, backend=backend)
    with torch.no_grad():
        for k in range(3):
            x = torch.randn(5, 3, 8, 8, generator=torch.Generator().manual_seed(k))
            torch.testing.assert_close(compiled(x), ref(x))
            _assert_same_buffers(model, ref)
    (plan,) = backend.plans()
    assert plan.mutated_inputs == [] and len(plan.inputs_mutated_in_graph) == 3  # mean, var, count
