"""The backend registry: plugins discovered through pluggy entry points, plus user registrations.

Discovery happens on first use (never at ``import ember``). Three sources feed the registry:
plugins in the entry-point group ``ember.plugins`` (first-party plugins are registered exactly as
a third party's would be), backends declared for torch.compile in the group
``torch_dynamo_backends``, and :func:`register_backend` calls.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
import threading
from typing import Any, Callable, Iterable, Sequence

import pluggy

from .errors import BackendUnavailable
from .plugin import PROJECT, BackendSpec, CompilerFn, EmberHookSpecs

log = logging.getLogger("ember.backends")

PLUGIN_GROUP = "ember.plugins"
TORCH_BACKEND_GROUP = "torch_dynamo_backends"


@dataclasses.dataclass(frozen=True)
class BackendEntry:
    """A backend as the registry knows it: its spec and who provided it."""

    spec: BackendSpec
    plugin: str
    distribution: str = ""
    version: str = ""

    @property
    def available(self) -> bool:
        return not self.why_unavailable()

    def why_unavailable(self) -> str:
        return self.spec.unavailable_reason()


class Registry:
    """Holds every known backend; fills itself from entry points on first use."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._discovered = False
        self._entries: dict[str, BackendEntry] = {}
        self._user: dict[str, BackendEntry] = {}
        self.plugin_errors: dict[str, str] = {}
        self.plugin_manager: pluggy.PluginManager | None = None

    def _discover(self) -> None:
        with self._lock:
            if self._discovered:
                return
            # built aside and kept only once complete: an interrupted discovery (Ctrl-C while a
            # plugin imports) leaves nothing half-registered, and the next call starts over
            pm = pluggy.PluginManager(PROJECT)
            pm.add_hookspecs(EmberHookSpecs)
            entries: dict[str, BackendEntry] = {}
            errors: dict[str, str] = {}
            declared = importlib.metadata.entry_points()  # one scan of the installed distributions
            plugin_eps = declared.select(group=PLUGIN_GROUP)
            for ep in plugin_eps:
                try:
                    pm.register(ep.load(), name=ep.name)
                except Exception as exc:  # a broken plugin must not break ember
                    errors[ep.name] = f"{type(exc).__name__}: {exc}"
                    log.warning("ember plugin %r failed to load: %s", ep.name, exc)
            dists = {pm.get_name(p): d for p, d in _plugin_dists(pm, plugin_eps)}
            for plugin in pm.get_plugins():
                name = pm.get_name(plugin) or repr(plugin)
                dist = dists.get(name)
                for spec in plugin.ember_backends():
                    _add(entries, BackendEntry(spec, name, *_dist_info(dist)))
            for ep in declared.select(group=TORCH_BACKEND_GROUP):
                if ep.name not in entries:
                    spec = BackendSpec(
                        name=ep.name,
                        compiler=ep.value,
                        description="declared for torch.compile (torch_dynamo_backends)",
                    )
                    _add(entries, BackendEntry(spec, TORCH_BACKEND_GROUP, *_dist_info(ep.dist)))
            self._entries, self.plugin_errors, self.plugin_manager = entries, errors, pm
            self._discovered = True

    def entries(self) -> dict[str, BackendEntry]:
        self._discover()
        return {**self._entries, **self._user}

    def register(self, spec: BackendSpec) -> None:
        with self._lock:
            self._user[spec.name] = BackendEntry(spec, "register_backend")

    def lookup(self, backend: str | CompilerFn) -> tuple[str, CompilerFn, BackendSpec | None]:
        """Resolve ``backend`` to (name, compiler callable, spec or None for a bare callable)."""
        if callable(backend):
            return getattr(backend, "__name__", repr(backend)), backend, None
        if not isinstance(backend, str):
            raise TypeError(f"backend must be a name or a callable, not {type(backend).__name__}")
        entries = self.entries()
        entry = entries.get(backend)
        if entry is None:
            known = ", ".join(sorted(n for n, e in entries.items() if e.available))
            raise BackendUnavailable(f"unknown backend {backend!r}; available backends: {known}")
        reason = entry.why_unavailable()
        if reason:
            raise BackendUnavailable(f"backend {backend!r} is not available: {reason}")
        try:
            compiler = entry.spec.load()
        except ImportError as exc:
            raise BackendUnavailable(
                f"backend {backend!r} could not be imported ({exc}); "
                f"install with: pip install {entry.spec.install or entry.distribution or backend}"
            ) from exc
        return backend, compiler, entry.spec


def _add(entries: dict[str, BackendEntry], entry: BackendEntry) -> None:
    name = entry.spec.name
    if name in entries:
        log.warning("backend %r from %s shadows the one from %s", name, entry.plugin, entries[name].plugin)
    entries[name] = entry


def _plugin_dists(pm: pluggy.PluginManager, plugin_eps: Iterable[Any]) -> Iterable[tuple[Any, Any]]:
    # pluggy records distributions only for its own entry-point loader; match by module instead.
    by_module: dict[str, Any] = {}
    for ep in plugin_eps:
        by_module[ep.value.split(":")[0]] = ep.dist
    for plugin in pm.get_plugins():
        yield plugin, by_module.get(getattr(plugin, "__name__", ""))


def _dist_info(dist: Any) -> tuple[str, str]:
    if dist is None:
        return "", ""
    return dist.metadata["Name"], dist.version


REGISTRY = Registry()


def list_backends(exclude_tags: Sequence[str] | None = ("debug", "experimental")) -> list[str]:
    """Names of the usable backends, sorted, leaving out those carrying any of ``exclude_tags``."""
    excluded = set(exclude_tags or ())
    return sorted(
        name
        for name, entry in REGISTRY.entries().items()
        if entry.available and not excluded.intersection(entry.spec.tags)
    )


def register_backend(
    compiler_fn: CompilerFn | None = None,
    name: str | None = None,
    tags: Sequence[str] = (),
    dynamic: bool = False,
) -> Any:
    """Register a ``(gm, example_inputs) -> callable`` backend; usable as a decorator.
    ``dynamic=True``: it handles graphs with symbolic sizes (see ``BackendSpec.dynamic``)."""

    def register(fn: CompilerFn) -> CompilerFn:
        REGISTRY.register(BackendSpec(name=name or fn.__name__, compiler=fn, tags=tuple(tags), dynamic=dynamic))
        return fn

    return register if compiler_fn is None else register(compiler_fn)


def backend_table() -> list[dict[str, str]]:
    """One row per backend for ``python -m ember backends``."""
    rows = []
    for name, entry in sorted(REGISTRY.entries().items()):
        dist = f"{entry.distribution} {entry.version}".strip()
        rows.append(
            {
                "backend": name,
                "plugin": entry.plugin,
                "distribution": dist,
                "tags": ",".join(entry.spec.tags),
                "status": "available" if entry.available else "unavailable",
                "detail": entry.why_unavailable() or entry.spec.description,
            }
        )
    for plugin, error in REGISTRY.plugin_errors.items():
        rows.append({"backend": "?", "plugin": plugin, "distribution": "", "tags": "",
                     "status": "broken", "detail": error})
    return rows
