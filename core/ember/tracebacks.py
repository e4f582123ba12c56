"""Tracebacks through compiled code tell the user's story: the user's files, functions and lines.

An exception that leaves a compiled function passes through code ember generated; the
wrapper hands it to :func:`shown_as_user_code`, which rebuilds its traceback:

- A runner (the generated code that calls a graph, performs a graph break's step in Python and
  calls the resume function) is made under the user's file and function name, with the line of
  the break (:func:`relocate`), so its frame reads as the user's function at the break. Resume
  functions keep the user's code object's names and lines themselves (capture/resume.py).
- A graph's frame that raised (a GraphModule's ``forward``, called by a runner or inside a
  backend, e.g. AOT's forward graph) is replaced by the frames of the failing node's
  ``stack_trace`` (capture/positions.py): the user's function and each inlined call at the
  line of the op, as eager would show them. These frames are made the way Jinja2 shows
  template lines: a ``raise`` compiled at the user's file and line. A note names the node.
- ember's pass-through frames (the wrapper, the cache miss, the eager fallback, the binder,
  the trampoline of a module with hooks) are left out, and so is a runner whose resume function
  raised (eager shows the raising line after the break alone); backend frames outside a graph
  stay (a custom backend's own error shows its own line).

Rewriting happens only on the exception path; whatever it cannot read leaves the traceback
as Python made it.
"""
from __future__ import annotations

import linecache
import os
import re
import types
import weakref
from typing import Callable, Iterable

import torch
from bytecode import Bytecode, Instr
from bytecode.instr import InstrLocation

from .capture.positions import Position, parse_stack_trace

#: (file, function) of code that only passes a call along: its frames, real or made from a
#: graph node's stack, are left out
_PASS_THROUGH: set[tuple[str, str]] = set()
#: runner code -> the code of the function it runs a part of
_RUNNERS: "weakref.WeakKeyDictionary[types.CodeType, types.CodeType]" = weakref.WeakKeyDictionary()
_RESUMES: "weakref.WeakSet[types.CodeType]" = weakref.WeakSet()
_FAKE_CODES: dict[Position, types.CodeType] = {}
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_ASSIGNED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=")

#: one traceback entry: (frame, last instruction, line)
_Entry = tuple[types.FrameType, int, int]


def pass_through(*functions: Callable) -> None:
    """Leave the frames of these functions, and of functions nested in them, out of tracebacks."""
    for fn in functions:
        todo = [fn.__code__]
        while todo:
            code = todo.pop()
            _PASS_THROUGH.add((code.co_filename, code.co_name))
            todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))


def relocate(code: types.CodeType, filename: str, name: str, qualname: str,
             line_of: Callable[[int], int]) -> types.CodeType:
    """``code`` under another file and name, each line ``n`` of its source shown as ``line_of(n)``
    (no column positions: the columns of generated code mean nothing in the user's line)."""
    bc = Bytecode.from_code(code)
    for item in bc:
        if isinstance(item, Instr) and item.lineno is not None:
            line = line_of(item.lineno)
            item.location = InstrLocation(line, line, None, None)
    bc.filename, bc.name, bc.qualname = filename, name, qualname
    bc.first_lineno = line_of(code.co_firstlineno)
    return bc.to_code()


def register_runner(code: types.CodeType, user_code: types.CodeType) -> None:
    """Mark a runner's code (of a part of ``user_code``): a graph it calls is shown in its place
    when the graph raises, and it is left out where the part after its break raised."""
    _RUNNERS[code] = user_code


def register_resume(code: types.CodeType) -> None:
    """Mark the code of a resume function (the part of a function after a graph break)."""
    _RESUMES.add(code)


def shown_as_user_code(exc: BaseException) -> BaseException:
    """``exc`` with its traceback rebuilt (see the module docstring); to be raised again by the
    frame that caught it, whose own entry Python adds back when it does."""
    tb = exc.__traceback__
    if tb is None:
        return exc
    try:
        entries = [(t.tb_frame, t.tb_lasti, t.tb_lineno) for t in _walk(tb.tb_next)]
        entries, resume_parts = _graph_frames_as_user_lines(entries, exc)
        entries = [e for e in entries if (e[0].f_code.co_filename, e[0].f_code.co_name) not in _PASS_THROUGH]
        entries = _without_runners_before_resumes(entries, resume_parts)
        new_tb = None
        for frame, lasti, line in reversed(entries):
            new_tb = types.TracebackType(new_tb, frame, lasti, line)
    except Exception:  # never make an error harder to read than Python would
        return exc
    return exc.with_traceback(new_tb)


def _walk(tb: types.TracebackType | None) -> Iterable[types.TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _graph_frames_as_user_lines(entries: list[_Entry], exc: BaseException
                                ) -> tuple[list[_Entry], set[types.FrameType]]:
    """Entries with a raising graph's frames replaced by the user's lines of its failing node,
    and the frames that stand for a resume function's code."""
    resume_parts = {e[0] for e in entries if e[0].f_code in _RESUMES or _RUNNERS.get(e[0].f_code) in _RESUMES}
    for g in range(len(entries) - 1, -1, -1):
        node = _failing_node(entries[g])
        if node is None:
            continue
        positions = [p for p in parse_stack_trace(node.stack_trace) if (p[0], p[2]) not in _PASS_THROUGH]
        if not positions:
            break
        start = next((r for r in range(g - 1, -1, -1) if entries[r][0].f_code in _RUNNERS), g)
        # deeper frames: the op's own Python (a custom op's) stays, torch's machinery does not
        deeper = [e for e in entries[g + 1:] if not e[0].f_code.co_filename.startswith(_TORCH_DIR)]
        exc.add_note(f"(raised by the op {node.name!r} of a graph ember compiled; "
                     f"its source is the innermost frame above)")
        user = [_user_frame(p) for p in positions]
        if entries[start][0] in resume_parts:
            resume_parts.add(user[0][0])
        return entries[:start] + user + deeper, resume_parts
    return entries, resume_parts


def _without_runners_before_resumes(entries: list[_Entry], resume_parts: set[types.FrameType]) -> list[_Entry]:
    """A runner that called a resume function which raised says only where the break was:
    eager Python shows the line that raised, in the part after the break, alone."""
    kept = []
    for i, entry in enumerate(entries):
        following = entries[i + 1][0] if i + 1 < len(entries) else None
        if entry[0].f_code in _RUNNERS and following in resume_parts:
            continue
        kept.append(entry)
    return kept


def _failing_node(entry: _Entry) -> torch.fx.Node | None:
    """The node of a GraphModule's generated ``forward`` at this entry's line, if stamped."""
    frame, _, line = entry
    filename = frame.f_code.co_filename
    if not filename.startswith("<eval_with_key>"):
        return None
    gm = frame.f_locals.get("self")
    if not isinstance(gm, torch.fx.GraphModule):
        return None
    match = _ASSIGNED.match(linecache.getline(filename, line))
    if match is None:
        return None
    node = next((n for n in gm.graph.nodes if n.name == match.group(1)), None)
    return node if node is not None and node.stack_trace else None


class _Marker(Exception):
    pass


def _user_frame(position: Position) -> _Entry:
    """A frame at the user's file, function and line: a ``raise`` compiled there and run."""
    code = _FAKE_CODES.get(position)
    if code is None:
        filename, line, name = position
        raw = compile("raise ___marker", filename, "exec")
        code = _FAKE_CODES[position] = relocate(raw, filename, name, name, lambda _: line)
    try:
        exec(code, {"___marker": _Marker()})
    except _Marker as marker:
        tb = marker.__traceback__.tb_next  # the frame of ``code``
        return tb.tb_frame, tb.tb_lasti, tb.tb_lineno
    raise AssertionError("unreachable: the code raises")
