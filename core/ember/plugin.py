"""The public plugin API: what a backend plugin (first- or third-party) imports from ember.

A plugin is a module registered under the entry-point group ``ember.plugins``. It implements the
``ember_backends`` hook and returns :class:`BackendSpec` descriptions. The compiler itself is named
by a ``"module:attribute"`` string so that listing backends never imports heavy dependencies.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from typing import Any, Callable, Protocol, Sequence

import pluggy

PROJECT = "ember"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

#: A backend: ``(gm, example_inputs) -> callable`` taking the graph's inputs, returning its outputs.
CompilerFn = Callable[..., Callable[..., Any]]


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    """Description of one backend a plugin contributes.

    name:        the name users pass as ``backend=``.
    compiler:    the compiler callable, or ``"package.module:attr"`` to import it on first use.
    tags:        e.g. ``("debug",)``, ``("training", "inference")``, ``("experimental",)``.
    requires:    top-level modules that must be importable for the backend to work.
    install:     what to ``pip install`` when a required module is missing.
    description: one line for ``python -m ember backends``.
    accepts_options: the compiler takes keyword arguments ``mode=`` and ``options=``.
    options:     the keys ``options=`` may hold, or ``"module:attr"`` naming them (imported when
                 options are given); ``ember.compile`` refuses any other key with an error that
                 names these. None: the core does not check the keys.
    dynamic:     the compiler accepts graphs with symbolic sizes (``torch.SymInt`` in the
                 placeholders' ``meta["val"]``) and returns a callable correct for every size the
                 guards admit; a backend without it is compiled once per concrete shape. A
                 compiler passed to ``ember.compile`` as a callable declares it with an
                 attribute ``dynamic = True``.
    check:       optional ``"module:attr"`` (or callable) returning "" when the backend can run
                 on this machine, else the reason it cannot (e.g. "needs a CUDA device").
    packager:    optional ``"module:attr"`` (or object) naming the backend's :class:`Packager`,
                 which ``ember.aot_compile`` packages need; None: the backend makes no packages.
    """

    name: str
    compiler: str | CompilerFn
    tags: Sequence[str] = ()
    requires: Sequence[str] = ()
    install: str = ""
    description: str = ""
    accepts_options: bool = False
    check: str | Callable[[], str] | None = None
    dynamic: bool = False
    options: Sequence[str] | str | None = None
    packager: Any = None

    def option_names(self) -> Sequence[str] | None:
        """The keys ``options=`` may hold (see ``options``), or None when not declared."""
        if isinstance(self.options, str):
            return tuple(_resolve(self.options))
        return self.options

    def missing_modules(self) -> list[str]:
        """Required modules that cannot be found (checked without importing them)."""
        missing = []
        for module in self.requires:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(module)
        return missing

    def unavailable_reason(self) -> str:
        """"" when the backend can run here, else why not (missing modules first)."""
        missing = self.missing_modules()
        if missing:
            hint = self.install or " ".join(missing)
            return f"missing module(s) {', '.join(missing)}; install with: pip install {hint}"
        if self.check is None:
            return ""
        try:
            return _resolve(self.check)()
        except Exception as exc:  # a failing check means "cannot run", never a crash
            return f"availability check failed: {type(exc).__name__}: {exc}"

    def load(self) -> CompilerFn:
        """Import (if named by a string) and return the compiler callable."""
        return _resolve(self.compiler)

    def load_packager(self) -> Packager | None:
        """Import (if named by a string) and return the packager; None when there is none."""
        return _resolve(self.packager) if isinstance(self.packager, str) else self.packager


class Packager(Protocol):
    """What ``ember.aot_compile`` and ``ember.aot_load`` need from a backend."""

    def save(self, gm: Any, example_inputs: Sequence[Any], folder: str, options: dict) -> dict:
        """Compile ``gm`` (a torch-level graph run under no_grad, weights among its inputs) for
        ``example_inputs`` and write what runs it into ``folder``; returns JSON-able facts for
        the manifest, given back to ``load``. Its ``versions`` entry (a dict of strings) is
        checked against :meth:`versions` when loading."""
        ...

    def versions(self, info: dict) -> dict:
        """What a package saved with ``info`` needs of this process (e.g. the device's name)."""
        ...

    def load(self, folder: str, info: dict) -> Callable[..., tuple]:
        """What ``save`` wrote, ready to run: takes the graph's inputs, returns its outputs as a
        tuple. Generates, traces and compiles nothing."""
        ...


def _resolve(target: Any) -> Any:
    """Return ``target`` itself if callable, else import ``"module:attr.path"``."""
    if callable(target):
        return target
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


class EmberHookSpecs:
    """Hook specifications that plugins implement."""

    @hookspec
    def ember_backends(self) -> Sequence[BackendSpec]:
        """Return the backends this plugin provides."""
        raise NotImplementedError

    @hookspec
    def ember_reset(self) -> None:
        """``ember.reset()`` was called: drop caches and free memory held for compiled code."""


__all__ = ["BackendSpec", "CompilerFn", "EmberHookSpecs", "Packager", "hookimpl", "hookspec", "PROJECT"]
