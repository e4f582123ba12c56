"""Behaviours of torch's ``test/dynamo/test_python_autograd.py``, in our own program: a small tape-based
reverse-mode autograd written in plain Python (objects with operator overloads, a global tape of
named tuples holding closures, dicts keyed by names) captured whole, forward and backward, with a
global counter and tape reset inside and outside the captured code."""
from __future__ import annotations

import typing

import torch

from behaviour_harness import Suite

SUITE = S = Suite("test_python_autograd")

_counter = 0


def _next_label() -> str:
    global _counter
    label = f"n{_counter}"
    _counter += 1
    return label


class Node:
    def __init__(self, value, label=None):
        self.value = value
        self.label = label or _next_label()

    def __mul__(self, other):
        return _mul(self, other)

    def __add__(self, other):
        return _add(self, other)

    def total(self, label=None):
        return _total(self, label)

    def broadcast(self, sizes):
        return _broadcast(self, sizes)


class Record(typing.NamedTuple):
    inputs: list
    outputs: list
    backward: typing.Callable


TAPE: list = []


def clear_tape():
    global _counter
    TAPE.clear()
    _counter = 0


def _mul(a, b):
    if isinstance(b, float) and b == 1.0:
        return a
    out = Node(a.value * b.value)

    def backward(grads):
        (g,) = grads
        return [g * b, g * a]

    TAPE.append(Record([a.label, b.label], [out.label], backward))
    return out


def _add(a, b):
    out = Node(a.value + b.value)

    def backward(grads):
        (g,) = grads
        return [g * 1.0, g * 1.0]

    TAPE.append(Record([a.label, b.label], [out.label], backward))
    return out


def _total(a, label):
    out = Node(torch.sum(a.value), label=label)

    def backward(grads):
        (g,) = grads
        return [g.broadcast(a.value.size())]

    TAPE.append(Record([a.label], [out.label], backward))
    return out


def _broadcast(a, sizes):
    assert a.value.dim() == 0
    out = Node(a.value.expand(sizes))

    def backward(grads):
        (g,) = grads
        return [g.total()]

    TAPE.append(Record([a.label], [out.label], backward))
    return out


def gradients(loss, wanted):
    acc = {loss.label: Node(torch.ones(()))}

    def lookup(labels):
        return [acc[name] if name in acc else None for name in labels]

    for rec in reversed(TAPE):
        outs = lookup(rec.outputs)
        if all(g is None for g in outs):
            continue
        for name, g in zip(rec.inputs, rec.backward(outs)):
            if name not in acc:
                acc[name] = g
            else:
                acc[name].value = acc[name].value + g.value
    return lookup(w.label for w in wanted)


def product_of_sum(a, b):
    s = a + b
    return s * b


def _args(seed):
    def make():
        clear_tape()
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(6, generator=g), torch.randn(6, generator=g))
    return make


def _values(nodes):
    if isinstance(nodes, Node):
        return nodes.value
    return [n.value for n in nodes]


def _post(out, *args):
    return _values(out)


@S.case("test_forwards1", _args(1), _args(2), count=True, frames=1, post=_post, setup=clear_tape)
def forward_loss_on_tape(a, b):
    a = Node(a, label="a")
    b = Node(b, label="b")
    return product_of_sum(a, b).total()


@S.case("test_forwards2", _args(1), _args(2), count=True, frames=1, post=_post, setup=clear_tape)
def forward_loss_resetting_tape_inside(a, b):
    clear_tape()
    a = Node(a, label="a")
    b = Node(b, label="b")
    loss = product_of_sum(a, b).total()
    clear_tape()
    return loss


@S.case("test_backwards1", _args(1), _args(2), count=True, frames=1, post=_post, setup=clear_tape)
def forward_and_backward_on_tape(a, b):
    a = Node(a, label="a")
    b = Node(b, label="b")
    loss = product_of_sum(a, b).total()
    return gradients(loss, [a, b])


@S.case("test_backwards2", _args(1), _args(2), count=True, frames=1, post=_post, setup=clear_tape)
def forward_and_backward_resetting_tape(a, b):
    clear_tape()
    a = Node(a, label="a")
    b = Node(b, label="b")
    loss = product_of_sum(a, b).total()
    res = gradients(loss, [a, b])
    clear_tape()
    return res


def _node_args(seed):
    def make():
        clear_tape()
        g = torch.Generator().manual_seed(seed)
        return (Node(torch.randn(6, generator=g), label="a"), Node(torch.randn(6, generator=g), label="b"))
    return make


@S.case("test_split", _node_args(3), count=True, frames=1, post=lambda out, a, b: (_values(out), list(TAPE)[0].inputs))
def forward_of_node_arguments(a, b):
    return product_of_sum(a, b).total()


def _eager_loss():
    a, b = _node_args(4)()
    return (product_of_sum(a, b).total(), [a, b])


S.add("test_split", "backward_of_loss_built_eagerly", gradients, [_eager_loss], count=True, frames=1, post=_post)


test_behaviour = S.pytest_function()
