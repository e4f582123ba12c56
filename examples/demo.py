"""The seed tutorial (TorchDynamo/TorchInductor) with ember in place of torch._dynamo, on CPU.

Run with ``make demo``. Each section prints what happened: the graphs ember captured, when it
recompiled, and (with the inductor backend) eager against compiled timings.
"""
from __future__ import annotations

import time
import traceback
import warnings
from typing import List

import numpy as np
import torch

import ember

BACKEND = "inductor"
try:
    ember.compile(lambda x: x, backend=BACKEND)
except ember.BackendUnavailable as exc:  # the inductor plugin is still being built
    print(f"[demo] {exc}; using the eager backend")
    BACKEND = "eager"


def section(title: str) -> None:
    print("\n" + "=" * 8 + f" {title} " + "=" * (70 - len(title)))


def custom_backend(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]):
    print("custom backend called with FX graph:")
    gm.graph.print_tabular()
    return gm.forward


def timed(fn, repeat: int = 20) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def basic_usage() -> None:
    section("Basic usage: ember.optimize / ember.compile on functions")

    def foo(x, y):
        a = torch.sin(x)
        b = torch.cos(x)
        return a + b

    opt_foo1 = ember.optimize(BACKEND)(foo)
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    print("opt_foo1 matches eager:", torch.allclose(opt_foo1(x, y), foo(x, y), atol=1e-6))

    @ember.optimize(BACKEND)
    def opt_foo2(x, y):
        a = torch.sin(x)
        b = torch.cos(x)
        return a + b

    print("decorated opt_foo2 matches eager:", torch.allclose(opt_foo2(x, y), foo(x, y), atol=1e-6))

    section("Basic usage: an nn.Module")

    class MyModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(100, 10)

        def forward(self, x):
            return torch.nn.functional.relu(self.lin(x))

    mod = MyModule()
    opt_mod = ember.compile(mod, backend=BACKEND)
    inp = torch.randn(10, 100)
    print("opt_mod matches eager:", torch.allclose(opt_mod(inp), mod(inp), atol=1e-5))


def custom_backend_section() -> None:
    section("A custom backend prints the FX graph ember captured")
    ember.reset()

    class MyModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(100, 10)

        def forward(self, x):
            return torch.nn.functional.relu(self.lin(x))

    opt_model = ember.optimize(custom_backend)(MyModule())
    opt_model(torch.randn(16, 100))


def recompilation() -> None:
    section("Python scalars and new input types: guards and recompilation")

    def f2(x, y):
        return x + y

    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    dynamo_f2 = ember.optimize(counting)(f2)
    inp1 = torch.randn(5, 5)
    print("f2(x, 3) matches eager:", torch.allclose(dynamo_f2(inp1, 3), f2(inp1, 3)))
    print("f2(x, 3) again matches:", torch.allclose(dynamo_f2(inp1, 3), f2(inp1, 3)))
    print("f2(x, 4) matches eager:", torch.allclose(dynamo_f2(inp1, 4), f2(inp1, 4)))
    print("f2(x, tensor) matches eager:", torch.allclose(dynamo_f2(inp1, inp1), f2(inp1, inp1)))
    print(f"graphs compiled: {len(graphs)} (one per guard set: y == 3, y == 4, y a tensor)")
    entry = dynamo_f2.__ember__.entries[0]
    print("guards of the newest entry:\n  " + "\n  ".join(entry.guard_descriptions))


def data_dependent_control_flow() -> None:
    section("Data-dependent control flow and non-PyTorch code: graph breaks")

    def f1(x, y):
        if x.sum() < 0:
            return -y
        return y

    inp1, inp2 = torch.randn(5, 5), torch.randn(5, 5)
    dynamo_f1 = ember.optimize(BACKEND)(f1)
    print("dynamo 1, 1:", torch.allclose(f1(inp1, inp2), dynamo_f1(inp1, inp2)))
    print("dynamo 1, 2:", torch.allclose(f1(-inp1, inp2), dynamo_f1(-inp1, inp2)))

    import scipy.fft

    def f3(x):
        x = x * 2
        x = scipy.fft.dct(x.numpy())
        x = torch.from_numpy(x)
        x = x * 2
        return x

    dynamo_f3 = ember.optimize(BACKEND)(f3)
    print("dynamo 3:", torch.allclose(f3(inp2), dynamo_f3(inp2), atol=1e-5))


def bar(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def graph_breaks() -> None:
    section("bar(a, b) with a custom backend: three graphs over two calls")
    ember.reset()
    opt_bar = ember.optimize(custom_backend)(bar)
    inp1, inp2 = torch.randn(10), torch.randn(10)
    opt_bar(inp1, inp2)
    opt_bar(inp1, -inp2)

    section("ember.explain(bar)")
    print(ember.explain(bar)(torch.randn(10), torch.randn(10)))


def nopython_section() -> None:
    section("fullgraph / nopython=True raises at the first graph break")
    opt_bar = ember.optimize(BACKEND, nopython=True)(bar)
    try:
        opt_bar(torch.randn(10), torch.randn(10))
    except ember.Unsupported:
        traceback.print_exc(limit=0)

    section("ember.export: one graph, or an error naming the break")
    try:
        ember.export(bar, torch.randn(10), torch.randn(10))
    except ember.Unsupported as exc:
        print("export(bar) fails as it should:", str(exc).splitlines()[1])
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(1568, 4))
    x = torch.randn(2, 3, 16, 16)
    gm, guards = ember.export(model, x)
    print("exported graph matches eager:", torch.allclose(gm(x), model(x), atol=1e-6))


def training() -> None:
    section(f"Training: forward, loss and backward inside the compiled function ({BACKEND})")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    reference = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    reference.load_state_dict(model.state_dict())

    def train(mod, data):
        pred = mod(data[0])
        loss = torch.nn.CrossEntropyLoss()(pred, data[1])
        loss.backward()

    opt, opt_ref = torch.optim.Adam(model.parameters()), torch.optim.Adam(reference.parameters())
    train_opt = ember.optimize(BACKEND)(train)
    for _ in range(5):
        data = (torch.randn(16, 32), torch.randint(0, 10, (16,)))
        opt.zero_grad(True)
        train_opt(model, data)
        opt.step()
        opt_ref.zero_grad(True)
        train(reference, data)
        opt_ref.step()
    same = all(torch.allclose(a, b, atol=1e-5) for a, b in zip(model.parameters(), reference.parameters()))
    print("weights after 5 compiled training steps match eager:", same)


def speed() -> None:
    section(f"Eager against ember ({BACKEND}) on CPU")
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512), torch.nn.Linear(512, 256)
    )
    x = torch.randn(64, 256)
    with torch.no_grad():
        compiled = ember.compile(model, backend=BACKEND)
        start = time.perf_counter()
        compiled(x)
        print(f"first call (capture + compile): {time.perf_counter() - start:.3f} s")
        eager_ms = timed(lambda: model(x)) * 1e3
        ember_ms = timed(lambda: compiled(x)) * 1e3
    print(f"eager median {eager_ms:.3f} ms, ember median {ember_ms:.3f} ms, speedup {eager_ms / ember_ms:.2f}x")


def main() -> None:
    print(f"ember {ember.__version__}, torch {torch.__version__}, backends: {ember.list_backends()}")
    basic_usage()
    custom_backend_section()
    recompilation()
    data_dependent_control_flow()
    graph_breaks()
    nopython_section()
    training()
    speed()


if __name__ == "__main__":
    main()
