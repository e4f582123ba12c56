"""Shared pytest set-up: the C++ guard helper built once, a fresh ember cache per test, the
`gpu` marker skipping without CUDA, and the grouping that pytest-xdist's workers need."""
from __future__ import annotations

import os

import pytest
import torch
from ember import native_guards

# Without CUDA, Triton kernels run in Triton's interpreter, which must be chosen before anything
# imports triton: test modules of other folders do (transformers, torch.compile) at collection.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Fixed before any conftest points EMBER_CACHE_DIR at a fresh folder: one build per machine.
os.environ.setdefault("EMBER_NATIVE_DIR", native_guards.native_dir())


@pytest.fixture(autouse=True)
def _reset_ember():
    import ember

    ember.reset()
    yield
    ember.reset()
    if torch._C._len_torch_function_stack():
        # a test left torch.set_default_device's mode behind: every later torch call of this worker
        # would go through Python (several times slower) and see a mode it did not ask for
        torch.set_default_device(None)


def pytest_configure(config):
    """Build the C++ tensor check of guards before the first test compiles, so that every test
    (and every process a test starts) runs the same guards, instead of switching when a
    background build finishes part-way through the session. Under pytest-xdist the controller
    builds it before the workers start, and each worker finds it built."""
    native_guards.ensure_built()


def pytest_collection_finish(session):
    """torch's OpInfo module (torch.testing._internal.common_utils, imported by tests/ops and by the
    Triton cases taken from OpInfo samples) freezes torch.backends flags for the whole process when
    imported; the other tests set flags (cudnn.allow_tf32) as users do, so they are unfrozen."""
    torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True


def pytest_collection_modifyitems(config, items):
    from long_tests import LONG

    long = set(LONG)
    for item in items:
        if item.nodeid in long:
            item.add_marker(pytest.mark.long)
    # Tests sharing a module-scoped fixture (the distributed scenarios, each a pair of processes
    # running every case) stay on one pytest-xdist worker (`--dist loadgroup`), so it runs once.
    for item in items:
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d.scope == "module" for fixturedefs in defs.values() for d in fixturedefs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
