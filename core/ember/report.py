"""``EMBER_REPORT=folder``: one HTML page of what ember did in this process, written at exit.

For each compiled function (its source first), in the order they were first compiled: how many
graphs, graph breaks, eager fallbacks and recompilations, and the compile time; then each graph
(its code with the user's source lines as comments, and the guards that select it), each graph
break and fallback with the user's stack (file, line, the line itself) and the reason, and each
recompilation with the guards that failed. ``ember.report.write(folder)`` writes it on demand.
The page is plain HTML (no script, no external file): open ``folder/index.html``.
"""
from __future__ import annotations

import atexit
import dataclasses
import html
import inspect
import linecache
import os
import time
from typing import Any

from . import compiled


@dataclasses.dataclass
class _Function:
    name: str
    source: tuple[str, int] | None = None
    graphs: list[tuple[str, list[str]]] = dataclasses.field(default_factory=list)
    breaks: list[tuple[str, list]] = dataclasses.field(default_factory=list)
    fallbacks: list[tuple[str, list]] = dataclasses.field(default_factory=list)
    recompiles: list[list[str]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0


class Recorder:
    """An observer of ember's compile events (``compiled.OBSERVERS``) that keeps what the page shows."""

    def __init__(self) -> None:
        self.functions: dict[str, _Function] = {}
        self.started = time.strftime("%Y-%m-%d %H:%M:%S")

    def _of(self, name: str) -> _Function:
        return self.functions.setdefault(name, _Function(name))

    def __call__(self, event: str, details: dict[str, Any]) -> None:
        name = details.get("function")
        if name is None:
            return
        fn = self._of(name)
        if event == "graph":
            fn.graphs.append((details["graph"].print_readable(print_output=False), list(details.get("guards", []))))
        elif event == "compiled":
            fn.seconds += details.get("seconds", 0.0)
            fn.source = fn.source or details.get("source")
        elif event in ("break", "fallback"):
            (fn.breaks if event == "break" else fn.fallbacks).append((details["message"], details.get("user_stack", [])))
        elif event == "recompile":
            fn.recompiles.append(list(details.get("reasons", [])))

    def html(self) -> str:
        rows = "".join(
            f"<tr><td><a href='#f{i}'>{_e(f.name)}</a></td><td>{len(f.graphs)}</td><td>{len(f.breaks)}</td>"
            f"<td>{len(f.fallbacks)}</td><td>{len(f.recompiles)}</td><td>{f.seconds:.2f}</td></tr>"
            for i, f in enumerate(self.functions.values()))
        sections = "".join(_section(i, f) for i, f in enumerate(self.functions.values()))
        return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>ember compile report</title>"
                f"<style>{_CSS}</style></head><body><h1>ember compile report</h1>"
                f"<p>process {os.getpid()}, started {self.started}, {len(self.functions)} compiled functions</p>"
                f"<table><tr><th>function</th><th>graphs</th><th>graph breaks</th><th>eager fallbacks</th>"
                f"<th>recompilations</th><th>compile seconds</th></tr>{rows}</table>{sections}</body></html>\n")


def _e(text: Any) -> str:
    return html.escape(str(text))


def _source(where: tuple[str, int] | None) -> str:
    if where is None:
        return ""
    filename, first = where
    lines = linecache.getlines(filename)[max(first - 1, 0):]
    try:
        block = inspect.getblock(lines) if lines else []
    except Exception:  # a source that does not parse on its own: its first lines
        block = lines[:20]
    return f"<p>{_e(filename)}:{first}</p><pre>{_e(''.join(block))}</pre>"


def _stack(frames: list) -> str:
    return "".join(f"<div class='at'>{_e(f[0])}:{f[1]} in {_e(f[2])}<br><code>{_e(f[3])}</code></div>"
                   for f in frames)


def _section(i: int, f: _Function) -> str:
    parts = [f"<h2 id='f{i}'>{_e(f.name)}</h2>", _source(f.source)]
    for k, (code, guards) in enumerate(f.graphs):
        parts.append(f"<details><summary>graph {k} ({len(guards)} guards)</summary><pre>{_e(code)}</pre>"
                     f"<p>guards</p><pre>{_e(chr(10).join(guards))}</pre></details>")
    for title, entries in (("graph break", f.breaks), ("eager fallback", f.fallbacks)):
        for message, frames in entries:
            parts.append(f"<div class='{title.split()[-1]}'><b>{title}</b>{_stack(frames)}<pre>{_e(message)}</pre></div>")
    for reasons in f.recompiles:
        parts.append(f"<div class='recompile'><b>recompiled</b>: {_e('; '.join(reasons) or 'no guard failed')}</div>")
    return "".join(parts)


_CSS = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:.3em .6em}pre{background:#f6f6f6;padding:.6em;overflow:auto}.break{border-left:4px solid #e90;"
        "padding-left:.6em;margin:.6em 0}.fallback{border-left:4px solid #c00;padding-left:.6em;margin:.6em 0}"
        ".recompile{border-left:4px solid #06c;padding-left:.6em;margin:.6em 0}.at{color:#555}")

_RECORDER: Recorder | None = None


def write(folder: str) -> str:
    """Write the page of what was recorded so far (recording starts with :func:`enable`) into
    ``folder/index.html``; its path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "index.html")
    with open(path, "w", encoding="utf-8") as out:
        out.write((_RECORDER or Recorder()).html())
    return path


def enable(folder: str | None = None) -> None:
    """Record compile events from now on; with ``folder``, write the page there at exit."""
    global _RECORDER
    if _RECORDER is None:
        _RECORDER = Recorder()
        compiled.OBSERVERS.append(_RECORDER)
    if folder:
        atexit.register(write, folder)


def configure() -> None:
    """Turn the report on from ``EMBER_REPORT`` (called when ember is imported)."""
    folder = os.environ.get("EMBER_REPORT", "")
    if folder:
        enable(folder)


__all__ = ["Recorder", "configure", "enable", "write"]
