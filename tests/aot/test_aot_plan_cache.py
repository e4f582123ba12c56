"""ember_aot's disk cache of plans: a second compile of the same graph in the same state loads the
stored plan (no tracing, no compiler call) and keeps eager's semantics; the key tells apart the
states that need other plans; broken entries and graphs that cannot be named are recompiled."""
from __future__ import annotations

import glob
import operator
import os
import pickle

import torch
import torch.fx

from ember_aot import aot_autograd
from ember_aot.plan_cache import plan_path


class GraphRunner:
    """What the test compiler returns: runs the aten graph it was given."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm

    def __call__(self, *args: torch.Tensor) -> tuple:
        return tuple(self.gm(*args))


class PickleCodec:
    """Saves a compiled graph as its pickled aten graph."""

    salt = "test"

    def __init__(self, directory: str) -> None:
        self.path = directory

    def directory(self) -> str:
        return self.path

    def dump(self, compiled: GraphRunner) -> bytes:
        return pickle.dumps(compiled.gm)

    def load(self, artifact: bytes) -> GraphRunner:
        return GraphRunner(pickle.loads(artifact))


def _backend(directory: str, calls: list):
    def compiler(gm: torch.fx.GraphModule, example_inputs: list) -> GraphRunner:
        calls.append(gm)
        return GraphRunner(gm)
    return aot_autograd(fw_compiler=compiler, cache=PickleCodec(directory))


def step(x: torch.Tensor, w: torch.Tensor, counter: torch.Tensor):
    """Mutates a buffer, returns a view of an input, a view of a result and a Python constant."""
    counter.add_(1)
    y = torch.relu(x @ w) * 2
    return y, x.t(), y.view(-1)[:3], 7


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(4, 5), torch.randn(5, 3, requires_grad=True), torch.zeros(())


def _run(compiled, inputs):
    x, w, counter = inputs
    out = compiled(x, w, counter)
    out[0].sum().backward()
    return out, w.grad, counter


def test_second_compile_loads_the_plan(tmp_path) -> None:
    calls: list = []
    backend = _backend(str(tmp_path), calls)
    expected = _run(step, _inputs())
    first = _run(backend(torch.fx.symbolic_trace(step), list(_inputs())), _inputs())
    assert len(calls) == 2  # forward and backward
    assert len(glob.glob(os.path.join(tmp_path, "*.plan"))) == 1

    inputs = _inputs()
    loaded = _run(backend(torch.fx.symbolic_trace(step), list(_inputs())), inputs)
    assert len(calls) == 2, "the stored plan was not used"
    for got in (first, loaded):
        (y, xt, head, seven), grad, counter = got
        torch.testing.assert_close(y, expected[0][0])
        torch.testing.assert_close(grad, expected[1])
        assert seven == 7 and counter.item() == 1
        assert head._base is not None  # still a view, as in eager
    x = inputs[0]
    assert loaded[0][1].data_ptr() == x.data_ptr() and loaded[0][1].stride() == x.t().stride()


def test_no_grad_state_gets_its_own_plan(tmp_path) -> None:
    calls: list = []
    backend = _backend(str(tmp_path), calls)
    backend(torch.fx.symbolic_trace(step), list(_inputs()))
    with torch.no_grad():
        compiled = backend(torch.fx.symbolic_trace(step), list(_inputs()))
        x, w, counter = _inputs()
        y = compiled(x, w, counter)[0]
    assert len(calls) == 3  # forward, backward, then the inference graph
    assert not y.requires_grad and counter.item() == 1


def test_key_covers_what_the_plan_depends_on(tmp_path) -> None:
    codec = PickleCodec(str(tmp_path))
    gm = torch.fx.symbolic_trace(step)
    x, w, counter = _inputs()
    key = plan_path(gm, [x, w, counter], codec)
    assert key == plan_path(torch.fx.symbolic_trace(step), [x.clone(), w.detach().clone().requires_grad_(),
                                                            counter.clone()], codec)
    others = [
        [torch.randn(3, 5), w, counter],                   # shape
        [x.double(), w, counter],                          # dtype
        [x.t().contiguous().t(), w, counter],              # strides
        [x, w.detach(), counter],                          # requires_grad
        [x, w, x[0, 0]],                                   # shares storage with another input
    ]
    keys = {plan_path(gm, args, codec) for args in others}
    assert key not in keys and len(keys) == len(others)
    with torch.no_grad():
        assert plan_path(gm, [x, w, counter], codec) != key
    codec.salt = "another compiler"
    assert plan_path(gm, [x, w, counter], codec) != key


def _local_helper(x: torch.Tensor) -> torch.Tensor:
    return x + 1


class Scale:
    """An argument that prints like a plain value but is an object."""

    def __repr__(self) -> str:
        return "2"


def test_graphs_that_cannot_be_named_are_not_stored(tmp_path) -> None:
    codec = PickleCodec(str(tmp_path))
    x = torch.randn(3)
    graph = torch.fx.Graph()
    a = graph.placeholder("a")
    graph.output((graph.call_function(_local_helper, (a,)),))
    assert plan_path(torch.fx.GraphModule({}, graph), [x], codec) is None

    graph = torch.fx.Graph()
    a = graph.placeholder("a")
    graph.output((graph.call_function(operator.mul, (a, Scale())),))
    assert plan_path(torch.fx.GraphModule({}, graph), [x], codec) is None

    gm = torch.fx.symbolic_trace(lambda t: torch.sin(t) + 1)
    assert plan_path(gm, [x], codec) is not None
    assert plan_path(gm, [[x]], codec) is None  # an input that is neither a tensor nor a plain value


def test_corrupt_entry_is_recompiled(tmp_path) -> None:
    calls: list = []
    backend = _backend(str(tmp_path), calls)
    backend(torch.fx.symbolic_trace(step), list(_inputs()))
    (entry,) = glob.glob(os.path.join(tmp_path, "*.plan"))
    with open(entry, "r+b") as f:
        f.truncate(os.path.getsize(entry) // 2)
    expected = _run(step, _inputs())
    got = _run(backend(torch.fx.symbolic_trace(step), list(_inputs())), _inputs())
    assert len(calls) == 4
    torch.testing.assert_close(got[0][0], expected[0][0])
    torch.testing.assert_close(got[1], expected[1])
    calls.clear()
    backend(torch.fx.symbolic_trace(step), list(_inputs()))
    assert calls == []  # the recompiled plan replaced the broken entry


def test_nothing_is_stored_when_the_compiler_cannot_save(tmp_path) -> None:
    codec = PickleCodec(str(tmp_path))
    codec.dump = lambda compiled: None  # type: ignore[method-assign]
    calls: list = []

    def compiler(gm: torch.fx.GraphModule, example_inputs: list) -> GraphRunner:
        calls.append(gm)
        return GraphRunner(gm)
    backend = aot_autograd(fw_compiler=compiler, cache=codec)
    backend(torch.fx.symbolic_trace(step), list(_inputs()))
    backend(torch.fx.symbolic_trace(step), list(_inputs()))
    assert len(calls) == 4 and glob.glob(os.path.join(tmp_path, "*.plan")) == []


def two_groups(x: torch.Tensor, w: torch.Tensor, prev: torch.Tensor):
    """An output from w and one from prev: two gradient groups, two backward graphs."""
    return (x @ w).relu().sum(), prev * 2


def test_plan_with_several_backward_graphs_is_stored(tmp_path) -> None:
    calls: list = []
    backend = _backend(str(tmp_path), calls)

    def run(fn):
        torch.manual_seed(0)
        x, w, prev = torch.randn(4, 5), torch.randn(5, 3, requires_grad=True), torch.randn(3, requires_grad=True)
        a, b = fn(x, w, prev)
        a.backward()
        assert prev.grad is None
        b.sum().backward()
        return a, b, w.grad, prev.grad

    expected = run(two_groups)
    inputs = [torch.randn(4, 5), torch.randn(5, 3, requires_grad=True), torch.randn(3, requires_grad=True)]
    for _ in range(2):
        got = run(backend(torch.fx.symbolic_trace(two_groups), inputs))
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e)
    assert len(calls) == 3, "forward and two backwards, compiled once"
