"""Graph breaks wherever they happen (issue 46 item 1): a generated grid of break kind x enclosing
construct x inlining depth x closure cells.

Each case is a chain of functions ``f0 -> f1 -> ... -> fD`` (the last call through an
``nn.Module`` in some cases); the innermost one breaks (``print``, a branch on a tensor,
``.item()`` feeding Python, ``backward()``) inside a construct (``with`` over torch's contexts and
a user's ``@contextmanager``, ``try/finally``, ``try/except``, a loop), and every function has
closure cells or not (a generator expression, a ``nonlocal`` write before and after the break, a
lambda). For each: the result and the gradient equal eager's, no function runs wholly eagerly,
and where torch.compile builds a resume function too (a break in straight code or in a ``with``
over torch's contexts) ember compiles no more graphs than it. torch.compile runs a function with
a break in a ``try`` block, a loop or a ``@contextmanager`` wholly eagerly; ember breaks there.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import linecache
import warnings

import pytest
import torch

import ember

LOG: list[str] = []


@contextlib.contextmanager
def user_ctx():
    LOG.append("enter")
    try:
        yield
    finally:
        LOG.append("exit")


BREAKS = {
    "print": ["print('', end='')"],
    "branch": ["if y.sum() > 0:", "    y = y + 1", "else:", "    y = y - 1"],
    "item": ["y = y + int(y.sum().item() > 1e9)"],
    "backward": ["w = torch.ones(2, requires_grad=True)", "with torch.enable_grad():",
                 "    (w * 3).sum().backward()", "y = y + w.grad.sum()"],
}
#: construct -> (lines opening it, lines closing it); the break goes in between, indented
CONSTRUCTS = {
    "plain": ([], []),
    "no_grad": (["with torch.no_grad():"], []),
    "autocast_off": (["with torch.autocast('cpu', enabled=False):"], []),
    "set_grad": (["with torch.set_grad_enabled(False):"], []),
    "user_ctx": (["with user_ctx():"], []),
    "try_finally": (["try:"], ["finally:", "    y = y - 1"]),
    "try_except": (["try:"], ["except ValueError:", "    y = y - 1"]),
    "loop": (["for i in range(2):"], []),
}
#: cells -> (lines before the call or the construct, lines after it)
CELLS = {
    "none": ([], []),
    "genexpr": (["k = 2", "s = sum(k * j for j in range(2))"], ["y = y + s"]),
    "nonlocal": (["c = 0", "def bump():", "    nonlocal c", "    c += 1", "bump()"], ["bump()", "y = y + c"]),
    "lambda": (["g = lambda: x * 0 + 1"], ["y = y + g()"]),
}
DEPTHS = (0, 1, 3)
#: constructs where torch.compile resumes after a break rather than running the function eagerly
TORCH_RESUMES = {"plain", "no_grad", "autocast_off", "set_grad"}


def source(kind: str, construct: str, depth: int, cells: str, module: bool) -> str:
    opener, closer = CONSTRUCTS[construct]
    before, after = CELLS[cells]
    lines: list[str] = []
    for d in range(depth, -1, -1):
        if d == depth:
            inner = ["y = y + 1", *BREAKS[kind], "y = y * 3"]
            indent = "    " if opener else ""
            body = ["y = x * 2", *before, *opener, *[indent + line for line in inner], *closer, *after, "return y + 1"]
        else:
            call = f"M{d + 1}()(x + 1)" if module and d == depth - 1 else f"f{d + 1}(x + 1)"
            body = ["y = x * 2", *before, f"y = {call} + y", *after, "return y"]
        lines += [f"def f{d}(x):", *["    " + line for line in body]]
        if module and d == depth:
            lines += [f"class M{d}(torch.nn.Module):", "    def forward(self, x):", f"        return f{d}(x)"]
    return "\n".join(lines) + "\n"


def build(src: str, tag: str):
    filename = f"<break_sites {tag}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace = {"torch": torch, "user_ctx": user_ctx}
    exec(compile(src, filename, "exec"), namespace)
    return namespace["f0"]


def call(fn, wrap=None):
    """(result, x's gradient, graphs compiled, messages of whole-function fallbacks, user_ctx log)."""
    graphs: list[int] = []

    def counting(gm, example_inputs):
        graphs.append(1)
        return gm.forward

    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    LOG.clear()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        out = (wrap(fn, counting) if wrap else fn)(x)
    fallbacks = [str(w.message) for w in caught if "runs eagerly" in str(w.message)]
    grad = None
    if out.requires_grad:
        out.sum().backward()
        grad = x.grad
    return out, grad, len(graphs), fallbacks, list(LOG)


def _cases() -> list[tuple]:
    """Every kind x construct, with depth, cells and a module call rotating so that every depth
    meets every kind of cells; plus the whole cells x depth grid under a ``with`` or a ``try``."""
    grid = list(itertools.product(DEPTHS, CELLS))
    out = []
    for i, (kind, construct) in enumerate(itertools.product(BREAKS, CONSTRUCTS)):
        depth, cells = grid[(i * 5) % len(grid)]
        out.append((kind, construct, depth, cells, depth > 0 and i % 2 == 0))
    for i, (depth, cells) in enumerate(grid):
        case = ("print" if depth else "branch", ("no_grad", "try_finally")[i % 2], depth, cells, depth == 3)
        if case not in out:
            out.append(case)
    return out


def _ember(fn, backend):
    return ember.compile(fn, backend=backend)


def _torch(fn, backend):
    torch._dynamo.reset()
    return torch.compile(fn, backend=backend)


@pytest.mark.parametrize("kind,construct,depth,cells,module", _cases(),
                         ids=lambda v: str(v) if not isinstance(v, bool) else ("module" if v else "fn"))
def test_break_site(kind: str, construct: str, depth: int, cells: str, module: bool) -> None:
    src = source(kind, construct, depth, cells, module)
    tag = f"{kind}-{construct}-{depth}-{cells}-{module}"
    expected, expected_grad, _, _, expected_log = call(build(src, tag))
    out, grad, graphs, fallbacks, log = call(build(src, tag), _ember)
    assert not fallbacks, fallbacks
    torch.testing.assert_close(out, expected)
    assert out.requires_grad == expected.requires_grad
    if expected_grad is not None:
        torch.testing.assert_close(grad, expected_grad)
    assert log == expected_log
    assert graphs > 0
    # after ``.item()`` under a ``with``, ember compiles one more graph that only switches grad mode
    if construct in TORCH_RESUMES and not (kind == "item" and construct != "plain"):
        assert graphs <= call(build(src, tag), _torch)[2]
