"""Source positions of graph nodes: the user's stack where capture recorded each node.

Every node the capture records gets ``node.stack_trace``, torch's convention: the frames the
interpreter was walking (the captured function first, then each inlined call) written as
:func:`traceback.format_list` writes them. torch.fx prints its last frame as a ``# File: ...``
comment above the node in ``gm.code``, ``make_fx`` carries it to the aten graph under
``torch.fx.traceback.preserve_node_meta``, and :mod:`ember.tracebacks` reads it back to show an
exception raised by the node at the user's line.
"""
from __future__ import annotations

import linecache
import re
import types
from typing import Protocol, Sequence

_FRAME_LINE = re.compile(r'^\s*File "(.+)", line (\d+), in (.+)$')

#: (filename, line, function name) of one frame, outermost first in a stack
Position = tuple[str, int, str]


class WalkedFrame(Protocol):
    """What this module reads of a capture frame: its code and the instruction it runs."""

    code: types.CodeType
    current: object  # an instruction with a ``lineno``, or None before the first one


_formatted: dict[Position, str] = {}


def _format(position: Position) -> str:
    text = _formatted.get(position)
    if text is None:
        filename, line, name = position
        source = linecache.getline(filename, line).strip()
        text = f'  File "{filename}", line {line}, in {name}\n'
        if source:
            text += f"    {source}\n"
        _formatted[position] = text
    return text


def stack_trace(frames: Sequence[WalkedFrame]) -> str:
    """``node.stack_trace`` for a node recorded while ``frames`` (outermost first) run."""
    parts = []
    for frame in frames:
        code = frame.code
        line = getattr(frame.current, "lineno", None) or code.co_firstlineno
        parts.append(_format((code.co_filename, line, code.co_name)))
    return "".join(parts)


def parse_stack_trace(text: str) -> list[Position]:
    """The frames of a ``stack_trace`` string, outermost first."""
    found = []
    for line in text.splitlines():
        match = _FRAME_LINE.match(line)
        if match:
            found.append((match.group(1), int(match.group(2)), match.group(3)))
    return found
