"""The exception ember_aot raises for graphs it cannot handle; callers fall back to eager."""
from __future__ import annotations


class AOTUnsupported(Exception):
    """The graph uses something ember_aot cannot trace or replay faithfully."""
