"""Keeps the faster of a compiled CPU graph and its eager graph, timed in the graph's first calls.

Generated kernels are not faster than eager everywhere: a graph whose time is in matrix
products (aten calls either way) gains little and can lose what its decompositions cost. Such a
graph falls back to eager. The first call runs the compiled graph (it waits for the kernels'
build) and the second the eager graph, untimed; the next ``TRIALS`` pairs alternate and are
timed; the one with the smaller median time then runs every later call (``FasterOf.choice``): the
median is what a later call costs, and the suite reports it. The best time can disagree: on
this project's 2-core host, a 1024x1024 softmax's compiled best call was faster than eager's and
its median slower, over 200 alternating calls (``benchmarks/run.py``'s ``softmax`` row). The
choice is logged on ``ember.inductor`` at INFO.

Always compiled, never timed: calls that need grad (a training step's time is mostly in its
backward, which a forward call cannot time), and graphs that draw random numbers (a choice made
by timing would make a seeded run's numbers depend on the machine's load). Only CPU graphs are
measured: GPU calls are asynchronous and the Triton kernels are the point of compiling there.
"""
from __future__ import annotations

import logging
import os
import statistics
import time
from typing import Any, Callable, Sequence

import torch
from ember.settle import Settling, Setter

log = logging.getLogger("ember.inductor")

#: timed calls of each candidate before choosing. The first calls after a compile run cold (a
#: 1024x1024 softmax: several times its warm time): with three each, eight fresh compiles of it
#: chose eager three times by the best time, where compiled was faster; with seven,
#: compiled every time. The median of seven leaves out the cold calls as well.
TRIALS = 7


def enabled(options: dict | None, example_inputs: Sequence[Any]) -> bool:
    """Whether a graph with these inputs is measured: CPU tensors only, and neither
    ``options={"eager_fallback": False}`` nor ``EMBER_INDUCTOR_EAGER_FALLBACK=0``."""
    if not (options or {}).get("eager_fallback", True):
        return False
    if os.environ.get("EMBER_INDUCTOR_EAGER_FALLBACK", "1") == "0":
        return False
    return all(x.device.type == "cpu" for x in example_inputs if isinstance(x, torch.Tensor))


def needs_grad(args: Sequence[Any]) -> bool:
    """Whether a call with these arguments records autograd history (on every call of a training
    graph: a plain loop that stops at the first parameter, no generator)."""
    if not torch.is_grad_enabled():
        return False
    for a in args:
        if isinstance(a, torch.Tensor) and a.requires_grad:
            return True
    return False


class FasterOf:
    """Calls ``compiled`` or ``eager`` (same graph, same signature); see the module docstring."""

    def __init__(self, compiled: Callable, eager: Callable, name: str) -> None:
        self.compiled = compiled
        self.eager = eager
        self.name = name
        self.choice: str | None = None  # "compiled" or "eager" once chosen
        self._calls = 0
        self._times: tuple[list[float], list[float]] = ([], [])  # compiled, eager
        self._run: Callable = self._trial
        self._holders = Settling()

    def __call__(self, *args: Any) -> Any:
        return self._run(*args)

    def settle(self, setter: Setter) -> None:
        """Once chosen, callers call the choice directly (``ember.settle``): a guard entry's calls
        all need grad or none does, and a choice is only made on calls that do not."""
        self._holders.add(setter)

    def _trial(self, *args: Any) -> Any:
        if needs_grad(args):
            return self.compiled(*args)
        n = self._calls
        self._calls += 1
        if n == 0:
            state = torch.random.get_rng_state()
            out = self.compiled(*args)
            if not torch.equal(state, torch.random.get_rng_state()):
                self._choose("compiled", "it draws random numbers")
            return out
        if n == 1:
            return self.eager(*args)
        which = n % 2  # 0: compiled, 1: eager
        start = time.perf_counter()
        out = (self.eager if which else self.compiled)(*args)
        self._times[which].append(time.perf_counter() - start)
        if n == 1 + 2 * TRIALS:  # the last timed eager call
            compiled_s, eager_s = (statistics.median(t) for t in self._times)
            why = f"median of {TRIALS} calls: compiled {compiled_s * 1e3:.3f} ms, eager {eager_s * 1e3:.3f} ms"
            self._choose("eager" if eager_s < compiled_s else "compiled", why)
        return out

    def _choose(self, choice: str, why: str) -> None:
        self.choice = choice
        self._run = self.compiled if choice == "compiled" else self._eager_unless_grad
        self._holders.done(self.compiled if choice == "compiled" else self.eager)
        log.info("ember_inductor: %s runs %s (%s)", self.name, choice, why)

    def _eager_unless_grad(self, *args: Any) -> Any:
        return self.compiled(*args) if needs_grad(args) else self.eager(*args)
