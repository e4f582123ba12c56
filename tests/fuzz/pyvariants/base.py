"""What a variant is: ``Variant`` (setup, body alternatives, mutations, cells, keyword
parameters) and ``Body`` (statements and the values they return), with their short constructors."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Body:
    stmts: tuple[str, ...]
    outputs: tuple[str, ...] = ()


def B(*stmts: str, out: tuple[str, ...] = ()) -> Body:
    return Body(stmts, out)


@dataclasses.dataclass(frozen=True)
class Variant:
    body: tuple[Body, ...]
    setup: tuple[str, ...] = ()
    mutations: tuple[str, ...] = ()
    cells: tuple[tuple[str, str], ...] = ()
    kwparams: tuple[tuple[str, str], ...] = ()


def V(body: list[Body], setup: list[str] = (), mutations: list[str] = (), cells: list = (),
      kwparams: list = ()) -> Variant:
    return Variant(tuple(body), tuple(setup), tuple(mutations), tuple(cells), tuple(kwparams))


#: a global tensor of the program's shape
TENSOR = "T$k = rand($S, seed=$s)"
