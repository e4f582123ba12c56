"""What one capture shares across the frames it interprets: graph, guards and limits."""
from __future__ import annotations

import dataclasses

from ..guards import GuardSet
from .graph import GraphBuilder

MAX_INLINE_DEPTH = 64


@dataclasses.dataclass
class CaptureState:
    graph: GraphBuilder = dataclasses.field(default_factory=GraphBuilder)
    guards: GuardSet = dataclasses.field(default_factory=GuardSet)
    depth: int = 0
    instructions: int = 0
    max_instructions: int = 2_000_000
