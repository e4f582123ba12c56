"""``functools.lru_cache``/``cache`` functions called from captured code (HF's
``logger.warning_once``): called with constants, they run once through their cache, as in eager;
called with tensors, they break the graph."""
import functools
import logging

import pytest
import torch

import ember

logger = logging.getLogger("ember.tests.cached")
CALLS = []


@functools.lru_cache(None)
def warn_once(self, message):
    CALLS.append(message)
    self.warning(message)


logging.Logger.ember_test_warn_once = warn_once


@functools.cache
def table(n):
    CALLS.append(n)
    return [i * i for i in range(n)]


@functools.lru_cache(maxsize=4)
def scale_of(t):
    return t * 2


def _counting():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend, graphs


@pytest.fixture(autouse=True)
def _fresh_caches():
    warn_once.cache_clear()
    table.cache_clear()
    CALLS.clear()


def test_warning_once_runs_once_and_does_not_break(caplog):
    def f(x):
        logger.ember_test_warn_once("slow path taken")
        return x * sum(table(4))

    backend, graphs = _counting()
    compiled = ember.compile(f, backend=backend, fullgraph=True)
    with caplog.at_level(logging.WARNING, logger=logger.name):
        for _ in range(3):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x), x * 14)
            f(x)  # eager shares the cache: it does not warn again either
    assert CALLS == ["slow path taken", 4]
    assert [r.getMessage() for r in caplog.records] == ["slow path taken"]
    assert len(graphs) == 1


def test_cached_function_of_a_tensor_breaks_and_stays_right():
    def f(x):
        return scale_of(x) + 1

    compiled = ember.compile(f, backend="eager")
    for _ in range(2):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), x * 2 + 1)


@functools.lru_cache(None)
def ones(n):
    return torch.ones(n)


def test_cached_tensor_is_not_frozen_into_the_code():
    def f(x):
        return x + ones(3)

    compiled = ember.compile(f, backend="eager")
    torch.testing.assert_close(compiled(torch.zeros(3)), torch.ones(3))
    ones(3).add_(1)  # the cached tensor changes: eager sees it, so must the compiled call
    torch.testing.assert_close(compiled(torch.zeros(3)), torch.full((3,), 2.0))
