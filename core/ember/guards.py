"""Guards: the checks that decide whether a cached compilation is valid for a new call.

The capture records, for every input it read, the weakest check that keeps the compiled code
right (tensor metadata, constant values, object identity, container lengths and keys, global
torch state). :meth:`GuardSet.compile` turns them into ONE generated Python function
``guard(L) -> bool`` (the hot path) plus a slower ``reasons(L) -> list[str]`` that names the
checks that failed, used only to explain a recompilation.
"""
from __future__ import annotations

import dataclasses
import weakref
from typing import Any, Callable

import torch

from .capture.sources import Constants, Source

GuardFn = Callable[[dict], bool]


@dataclasses.dataclass
class Check:
    """One boolean expression over ``L`` and the constants, with a description for logs."""

    expr: str
    description: str


class GuardSet:
    """Collects checks during a capture, one set of checks per source."""

    def __init__(self) -> None:
        self.consts = Constants()
        self.checks: list[Check] = []
        self._seen: set[tuple[str, str]] = set()

    def _add(self, kind: str, source: Source, expr: str, description: str) -> None:
        key = (kind, source.describe() if kind != "global" else expr)
        if key in self._seen:
            return
        self._seen.add(key)
        self.checks.append(Check(expr, description))

    def type_match(self, source: Source, value: Any) -> None:
        x = source.expr(self.consts)
        t = self.consts.name(type(value), "t")
        self._add("type", source, f"type({x}) is {t}",
                  f"{source.describe()}: type is {type(value).__qualname__}")

    def equals(self, source: Source, value: Any) -> None:
        """Type and value (``True != 1``, ``1.0 != 1`` here)."""
        self.type_match(source, value)
        x = source.expr(self.consts)
        if isinstance(value, float) and value != value:
            expr = f"{x} != {x}"
        elif isinstance(value, (int, float, bool, str, type(None), bytes)):
            expr = f"{x} == {value!r}"
        else:
            expr = f"{x} == {self.consts.name(value, 'v')}"
        self._add("equals", source, expr, f"{source.describe()} == {value!r}")

    def identity(self, source: Source, value: Any) -> None:
        """Same object; held through a weak reference where the object allows it."""
        x = source.expr(self.consts)
        try:
            ref = weakref.ref(value)
            expr = f"{x} is {self.consts.name(ref, 'w')}()"
        except TypeError:
            expr = f"{x} is {self.consts.name(value, 'o')}"
        self._add("identity", source, expr,
                  f"{source.describe()} is the same {type(value).__qualname__} object")

    def length(self, source: Source, value: Any) -> None:
        self.type_match(source, value)
        x = source.expr(self.consts)
        self._add("len", source, f"len({x}) == {len(value)}", f"len({source.describe()}) == {len(value)}")

    def dict_keys(self, source: Source, value: dict) -> None:
        self.type_match(source, value)
        x = source.expr(self.consts)
        keys = self.consts.name(tuple(value.keys()), "keys")
        self._add("keys", source, f"tuple({x}.keys()) == {keys}",
                  f"{source.describe()} keys == {tuple(value.keys())!r}")

    def tensor(self, source: Source, t: torch.Tensor) -> None:
        x = source.expr(self.consts)
        c = self.consts
        expr = (
            f"type(___t := {x}) is {c.name(type(t), 't')}"
            f" and ___t.dtype is {c.name(t.dtype, 'dtype')}"
            f" and ___t.device == {c.name(t.device, 'dev')}"
            f" and ___t.shape == {tuple(t.shape)!r}"
            f" and ___t.stride() == {tuple(t.stride())!r}"
            f" and ___t.requires_grad is {t.requires_grad!r}"
        )
        desc = (
            f"{source.describe()}: {type(t).__name__} {t.dtype} {t.device} shape={tuple(t.shape)} "
            f"stride={tuple(t.stride())} requires_grad={t.requires_grad}"
        )
        self._add("tensor", source, expr, desc)

    def same_object(self, a: Source, b: Source) -> None:
        self._add("alias", a, f"{a.expr(self.consts)} is {b.expr(self.consts)}",
                  f"{a.describe()} is {b.describe()}")

    def distinct(self, sources: list[Source]) -> None:
        if len(sources) < 2:
            return
        exprs = ", ".join(f"id({s.expr(self.consts)})" for s in sources)
        names = ", ".join(s.describe() for s in sources)
        self.checks.append(Check(f"len({{{exprs}}}) == {len(sources)}", f"{names} are distinct tensors"))

    def grad_mode(self) -> None:
        enabled = torch.is_grad_enabled()
        fn = self.consts.name(torch.is_grad_enabled, "f")
        self.checks.append(Check(f"{fn}() is {enabled}", f"grad mode is {'on' if enabled else 'off'}"))

    def inference_mode(self) -> None:
        enabled = torch.is_inference_mode_enabled()
        fn = self.consts.name(torch.is_inference_mode_enabled, "f")
        self.checks.append(Check(f"{fn}() is {enabled}", f"inference mode is {'on' if enabled else 'off'}"))

    def compile(self, name: str = "guard") -> tuple[GuardFn, Callable[[dict], list[str]]]:
        """Generate ``guard(L)`` and ``reasons(L)``."""
        body = " and ".join(f"({c.expr})" for c in self.checks) or "True"
        src = (
            f"def {name}(L):\n"
            f"    try:\n"
            f"        return {body}\n"
            f"    except Exception:\n"
            f"        return False\n"
        )
        namespace: dict[str, Any] = dict(self.consts.values)
        exec(compile(src, f"<ember {name}>", "exec"), namespace)
        guard_fn = namespace[name]
        guard_fn.__ember_source__ = src
        checks = list(self.checks)
        consts = dict(self.consts.values)

        def reasons(L: dict) -> list[str]:
            failed = []
            for check in checks:
                try:
                    ok = eval(check.expr, dict(consts), {"L": L})
                except Exception as exc:  # the source itself is gone
                    ok, check = False, Check(check.expr, f"{check.description} ({type(exc).__name__})")
                if not ok:
                    failed.append(check.description)
            return failed

        return guard_fn, reasons

    def describe(self) -> list[str]:
        return [c.description for c in self.checks]
