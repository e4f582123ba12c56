"""Options of the ``tvm`` backend: parsed once from ``mode=`` and ``options=`` into a frozen record.

Documented defaults (see the package docstring for the full table):

* ``fallback_on_grad=True``: when grad mode is on and an input requires grad, the graph runs with
  PyTorch eager and one warning is logged; ``False`` raises :class:`GradientsNotSupported`.
* ``tuning="default"``: TVM's default schedules plus ember's CPU parallel/vectorize pass;
  ``"meta_schedule"`` (also chosen by ``mode="max-autotune"``) tunes with ``trials`` trials.
* ``cache=True``: built libraries are kept on disk under ``cache_dir`` (``EMBER_CACHE_DIR`` or
  ``~/.cache/ember``) in the ``tvm`` subfolder.
* ``verify=True``: every compiled piece is run once on the first inputs and compared with eager;
  a mismatch keeps that piece in PyTorch.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import logging
from typing import Any, Mapping

log = logging.getLogger("ember.tvm")

TUNINGS = ("default", "none", "meta_schedule")
#: Modules MetaSchedule needs beyond apache-tvm itself (its process pool and its cost model).
TUNING_MODULES = ("psutil", "cloudpickle", "xgboost")
TUNING_INSTALL = "pip install 'apache-tvm[popen-pool,meta-schedule]'"


def missing_tuning_modules() -> list[str]:
    """Modules MetaSchedule needs that are not installed."""
    return [m for m in TUNING_MODULES if importlib.util.find_spec(m) is None]


@dataclasses.dataclass(frozen=True)
class TvmOptions:
    """Everything a user can set for the ``tvm`` backend."""

    fallback_on_grad: bool = True
    tuning: str = "default"
    trials: int = 64
    trials_per_task: int | None = None
    cache: bool = True
    cache_dir: str | None = None
    verify: bool = True
    partition: bool = True
    target: str | dict | None = None
    max_specializations: int = 8

    def cache_key_part(self) -> str:
        """The options that change what is built (and so belong in the cache key)."""
        return f"tuning={self.tuning};trials={self.trials};per_task={self.trials_per_task}"


#: the keys ``options=`` may hold (declared in the plugin's BackendSpec: ember.compile checks them)
NAMES = tuple(f.name for f in dataclasses.fields(TvmOptions))


def parse_options(mode: str | None = None, options: Mapping[str, Any] | None = None) -> TvmOptions:
    """Build :class:`TvmOptions` from torch.compile-style ``mode`` and an ``options`` dict.

    Unknown keys and bad values raise ``ValueError`` naming the offending key.
    """
    values: dict[str, Any] = {}
    if mode == "max-autotune" or mode == "max-autotune-no-cudagraphs":
        missing = missing_tuning_modules()
        if missing:
            log.warning("ember.tvm: mode=%r uses default schedules: MetaSchedule needs %s (%s)",
                        mode, ", ".join(missing), TUNING_INSTALL)
        else:
            values["tuning"] = "meta_schedule"
    elif mode not in (None, "default", "reduce-overhead"):
        raise ValueError(f"tvm backend: unknown mode {mode!r}")
    known = {f.name: f for f in dataclasses.fields(TvmOptions)}
    for key, value in dict(options or {}).items():
        if key not in known:
            raise ValueError(
                f"tvm backend: unknown option {key!r}; known options: {', '.join(sorted(known))}"
            )
        values[key] = value
    opts = TvmOptions(**values)
    if opts.tuning not in TUNINGS:
        raise ValueError(f"tvm backend: option 'tuning' must be one of {TUNINGS}, not {opts.tuning!r}")
    if opts.tuning == "meta_schedule" and missing_tuning_modules():
        raise ValueError(
            f"tvm backend: tuning='meta_schedule' needs {', '.join(missing_tuning_modules())}; "
            f"install with: {TUNING_INSTALL}"
        )
    if not isinstance(opts.trials, int) or opts.trials < 0:
        raise ValueError(f"tvm backend: option 'trials' must be an int >= 0, not {opts.trials!r}")
    if opts.max_specializations < 1:
        raise ValueError("tvm backend: option 'max_specializations' must be >= 1")
    return opts
