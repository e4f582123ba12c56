"""Python that library code runs around tensors: dict methods, namedtuple._replace, ModelOutput
iteration, logging's lock. Each runs in one graph (fullgraph) and matches eager."""
import collections
import logging

import pytest
import torch

import ember

modeling_outputs = pytest.importorskip("transformers.modeling_outputs")
Pair = collections.namedtuple("Pair", "a b")


def _dict_methods(x):
    d = {"a": x}
    d.update(b=x + 1)
    d.update({"c": x * 2}, e=x)
    e = dict(d, f=2)
    e.setdefault("z", 3)
    popped = e.pop("c")
    merged = {**e, "q": x - 1}
    return e.get("b"), list(e.items()), list(e.keys()), popped, merged, e.copy()


def _kwargs_merge(x, **kw):
    opts = dict(**kw)
    return x + opts.get("s", 0), {**kw, "t": x}


def _ordered(x):
    o = collections.OrderedDict()
    o["a"] = x
    o["b"] = x * 2
    return [v for v in o.values()], list(o.keys())


def _replace(x):
    p = Pair(x, 1)._replace(b=x * 2)
    return p, p._asdict()


def _model_output(x):
    out = modeling_outputs.BaseModelOutput(last_hidden_state=x, hidden_states=(x, x + 1))
    return [k for k in out], tuple(out.values()), len(out), out.to_tuple()


def _logger(x):
    # getLogger of an existing logger only reads the registry (under its RLock): one graph.
    # Logging a message is standard-library work that runs at a graph break, as torch.compile's.
    log = logging.getLogger("ember.test.protocols")
    return x + 1 if log.name.startswith("ember") else x


def _assert_same(got, want):
    if isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
    elif isinstance(want, dict):
        assert type(got) is type(want) and list(got) == list(want)
        for k in want:
            _assert_same(got[k], want[k])
    else:
        assert got == want


@pytest.mark.parametrize("fn", [_dict_methods, _ordered, _replace, _model_output, _logger],
                         ids=lambda f: f.__name__.strip("_"))
def test_matches_eager_in_one_graph(fn):
    logging.getLogger("ember.test.protocols")  # an existing logger: getLogger only reads the registry
    x = torch.randn(3)
    _assert_same(ember.compile(fn, backend="eager", fullgraph=True)(x), fn(x))


def test_kwargs_merge():
    x = torch.randn(3)
    _assert_same(ember.compile(_kwargs_merge, backend="eager", fullgraph=True)(x, s=3), _kwargs_merge(x, s=3))
