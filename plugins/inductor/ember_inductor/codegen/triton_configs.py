"""Launch configurations of a generated Triton kernel: the block sizes, warps and stages that
autotuning chooses among (``launch_configs``), and the grid each one launches (``launch_grid``).

Kept apart from the kernel's code generation (``triton.py``): they read the kernel's decisions
(tiled, persistent, dual, across rows) and sizes, never its body.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Sequence

import sympy

from .. import indexing
from ..indexing import FloorDiv
from ..symbolic import hint, hint_named, pyexpr

if TYPE_CHECKING:
    from .triton import TritonKernel

#: Elements of a persistent reduction's tile.
PERSISTENT_TILE = 8192
#: Elements of the wider persistent tile offered to a reduction across rows (a column sum).
OUTER_PERSISTENT_TILE = 16384


def pow2(n: Any) -> int:
    """The power of two at least ``n`` (at least 1)."""
    return 1 << max(0, (int(n) - 1).bit_length())


#: The cap on block sizes of a symbolic extent (no cap: any size may come).
_UNBOUNDED = 1 << 30


def _cap(n: Any) -> int:
    """Power of two at least ``n`` for a static ``n``, no cap for a symbolic one."""
    n = sympy.sympify(n)
    return pow2(n) if not n.free_symbols else _UNBOUNDED


def _ceil_div(n: Any, block: int) -> Any:
    """``ceil(n / block)``: an int, or Python source over the size symbols for a symbolic ``n``."""
    n = sympy.sympify(n)
    if not n.free_symbols:
        return -(-int(n) // block)
    return pyexpr(FloorDiv(n + block - 1, block))


@dataclasses.dataclass(frozen=True)
class LaunchConfig:
    """One launch configuration: block sizes, warps and stages, and where it is valid."""

    meta: tuple  # ((name, value), ...) of the block-size constexprs
    num_warps: int
    num_stages: int = 1
    rmax: int = 0  # > 0: valid only for rows of at most this many elements (a persistent variant)
    divisible: tuple[int, ...] = ()  # signature positions of sizes assumed multiples of 16

    def kwargs(self) -> dict:
        return dict(self.meta)


def launch_configs(k: TritonKernel) -> list[LaunchConfig]:
    """The launch configurations of kernel ``k`` autotuned on the first run (first = default).

    Pruned with the autotuning logs of the GPU benchmark models on the H100 (491 kernels):
    without 32x32 tiles, tiled kernels lost 0.3% at the geomean; looped reductions took one
    of the two single-row shapes (64x64 stays for reductions over a strided dimension, which
    those models had few of); a persistent reduction's 256 elements per warp did as well as
    twice the warps (0.8%).

    With symbolic sizes, the configurations for the example's sizes come first (the default,
    and the interpreter's), then those for any size: each size bucket autotunes among all.
    A dual kernel's persistent configurations (``PERSISTENT=1``, ``RBLOCK`` the example's row
    length rounded up) come first, valid for rows up to that ``RBLOCK`` (``rmax``); its
    looped ones (``PERSISTENT=0``) serve every length."""
    symbolic = bool(k.numel.free_symbols or k.rnumel.free_symbols)
    by_hint = lambda n: pow2(hint(n))  # noqa: E731
    out = list(dict.fromkeys((_shapes(k, by_hint) if symbolic else []) + _shapes(k, _cap)))
    if k.dual:
        rb = pow2(hint(k.rnumel))
        persistent = [dataclasses.replace(c, meta=c.meta + (("PERSISTENT", 1),), rmax=rb)
                      for c in _persistent_configs(rb, by_hint(k.numel), k.wide_warps)]
        out = persistent + [dataclasses.replace(c, meta=c.meta + (("PERSISTENT", 0),)) for c in out]
    return _divisible_first(k, out)


def _divisible_first(k: TritonKernel, configs: list[LaunchConfig]) -> list[LaunchConfig]:
    """Where the example's sizes are multiples of 16: ``configs`` compiled assuming the same
    of every call (Triton then vectorizes loads along them; the launcher checks it per size
    bucket), followed by the first configuration of each form without the assumption, for
    calls whose sizes are not. Call after ``generate`` (which fixes the size parameters)."""
    first = len(k.params)
    divisible = tuple(first + j for j, name in enumerate(k.size_params)
                      if (hint_named(name) or 1) % 16 == 0)
    if not divisible:
        return configs
    generic = list({dict(c.meta).get("PERSISTENT"): c for c in reversed(configs)}.values())[::-1]
    return [dataclasses.replace(c, divisible=divisible) for c in configs] + generic


def _shapes(k: TritonKernel, cap: Any) -> list[LaunchConfig]:
    """The configurations, block sizes capped by ``cap(extent)``."""
    out: list[LaunchConfig] = []
    if k.tiled:
        y, x = cap(indexing.numel(k.plan.outer[:-1])), cap(k.plan.outer[-1])
        shapes = [(64, 64, 8), (16, 64, 4), (64, 16, 4)] + ([(256, 16, 8)] if x <= 16 else [])
        for yb, xb, w in shapes:
            out.append(LaunchConfig((("YBLOCK", min(yb, y)), ("XBLOCK", min(xb, x))), w))
    elif not k.is_reduction:
        n = cap(k.numel)
        for xb, w in [(1024, 4), (2048, 8), (512, 4), (256, 2)]:
            xb = min(xb, n)
            out.append(LaunchConfig((("XBLOCK", xb),), max(1, min(w, xb // 128))))
    elif k.persistent:
        out = _persistent_configs(pow2(k.rnumel), cap(k.numel), k.wide_warps)
    else:
        rb, n = cap(k.rnumel), cap(k.numel)
        # across rows also 8 columns by 128 rows (fast on the column sums of
        # ``_persistent_configs``' docstring, warm)
        shapes = [(1, 2048, 8), (1, 4096, 16), (64, 64, 8)] + ([(8, 128, 4)] if k.outer_reduction else [])
        for xb, r, w in shapes:
            out.append(LaunchConfig((("XBLOCK", min(xb, n)), ("RBLOCK", min(r, rb))), w, 2))
    return out


def _persistent_configs(rb: int, n: int, wide_warps: Sequence[int] = ()) -> list[LaunchConfig]:
    """Whole rows of ``RBLOCK = rb`` in registers, ``XBLOCK`` rows (at most ``n``) a program.

    A reduction across rows also gets tiles of ``OUTER_PERSISTENT_TILE`` elements, with each
    of ``wide_warps``: hand-written column sums of [2048, 384-1536] float32 read from memory
    (not the L2 cache) were fastest on an H200 with 8 columns a program, ahead of 4 columns and
    of torch.compile's split reductions (``benchmarks/column_sums.py``)."""
    out: list[LaunchConfig] = []
    for xb in (1, 2, 4, 8, 16, 32, 64):
        xb = min(xb, n)
        if xb * rb > PERSISTENT_TILE or (xb * rb < 256 and xb < n):
            continue
        out.append(LaunchConfig((("XBLOCK", xb), ("RBLOCK", rb)), max(1, min(16, xb * rb // 256))))
    wide = min(OUTER_PERSISTENT_TILE // rb, n)
    if wide * rb > PERSISTENT_TILE:
        out += [LaunchConfig((("XBLOCK", wide), ("RBLOCK", rb)), w) for w in wide_warps]
    return list(dict.fromkeys(out)) or [LaunchConfig((("XBLOCK", 1), ("RBLOCK", rb)), 16)]


def wide_tile_warps(k: TritonKernel, row_accesses: int) -> tuple[int, ...]:
    """Warps of the ``OUTER_PERSISTENT_TILE`` configurations. With 8 warps a thread holds 64
    elements of each row access: the GPT step's layer norm weight-gradient kernels (two row
    accesses and two per-row vectors) took 234 registers a thread (ptxas, sm_90), and 8 warps
    still won the cold timing for 3 of its 13. Kernels with more than two row accesses, or
    with 8-byte elements (which spilled), get 16 warps only."""
    names = {n for p in k.plan.placements for n, _ in p.node.reads + p.node.writes}
    wide_elements = max((k.buffers[n].get_dtype().itemsize for n in names), default=4) > 4
    return (16,) if row_accesses > 2 or wide_elements else (8, 16)


def launch_grid(k: TritonKernel, cfg: LaunchConfig) -> tuple:
    """The launch grid of kernel ``k`` under ``cfg``: ints, or Python source over the size
    symbols where symbolic."""
    meta = cfg.kwargs()
    if k.tiled:  # row blocks times column blocks, on one axis (``_header``)
        y = _ceil_div(indexing.numel(k.plan.outer[:-1]), meta["YBLOCK"])
        x = _ceil_div(k.plan.outer[-1], meta["XBLOCK"])
        return (y * x if isinstance(y, int) and isinstance(x, int) else f"({y}) * ({x})", 1, 1)
    return (_ceil_div(k.numel, meta["XBLOCK"]), 1, 1)
