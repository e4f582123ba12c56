"""Logging set-up from ``EMBER_LOGS``, e.g. ``EMBER_LOGS=recompiles,graph_breaks,graph``.

Each name enables the logger ``ember.<name>`` at INFO with a stderr handler; ``+name`` enables
DEBUG. Python's logging does the rest, so applications may also configure these loggers
directly.
"""
from __future__ import annotations

import logging
import os

TOPICS = ("recompiles", "graph_breaks", "graph", "guards", "capture", "backends", "fallback", "dynamic", "distributed")


def configure(spec: str | None = None) -> None:
    spec = os.environ.get("EMBER_LOGS", "") if spec is None else spec
    for item in filter(None, (s.strip() for s in spec.split(","))):
        level = logging.DEBUG if item.startswith("+") else logging.INFO
        name = item.lstrip("+")
        logger = logging.getLogger("ember" if name == "all" else f"ember.{name}")
        logger.setLevel(level)
        if not any(getattr(h, "_ember", False) for h in logger.handlers):
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("[ember.%(name)s] %(message)s".replace("ember.%(name)s", "%(name)s")))
            handler._ember = True  # type: ignore[attr-defined]
            logger.addHandler(handler)


def get(topic: str) -> logging.Logger:
    return logging.getLogger(f"ember.{topic}")
