"""Attribute stores on real objects whose class has its own Python ``__setattr__`` (HF's
PretrainedConfig): the hook is inlined and the store it ends in is replayed after the graph."""
import pytest
import torch

import ember


class Aliased:
    """Maps old names to new ones and validates, as configs do, through ``super().__setattr__``."""
    aliases = {"old": "new"}

    def __init__(self):
        self.new = 1
        self.log = []

    def __setattr__(self, key, value):
        if key in super().__getattribute__("aliases"):
            key = self.aliases[key]
        if key == "new" and not isinstance(value, int):
            raise TypeError("new must be an int")
        super().__setattr__(key, value)


class Counting:
    def __init__(self):
        object.__setattr__(self, "stores", 0)

    def __setattr__(self, key, value):
        object.__setattr__(self, "stores", self.stores + 1)
        object.__setattr__(self, key, value)


def _counting():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend, graphs


def test_custom_setattr_is_inlined_and_replayed():
    obj, ref = Aliased(), Aliased()

    def f(o, x):
        o.old = 5  # stored as o.new, through the class's __setattr__
        setattr(o, "extra", 2)
        return x * o.new + o.extra

    x = torch.randn(3)
    backend, graphs = _counting()
    got = ember.compile(f, backend=backend, fullgraph=True)(obj, x)
    torch.testing.assert_close(got, f(ref, x))
    assert len(graphs) == 1
    assert obj.__dict__ == ref.__dict__ and obj.new == 5 and "old" not in obj.__dict__


def test_each_store_runs_the_hook_once():
    obj, ref = Counting(), Counting()

    def f(o, x):
        o.a = 1
        o.b = 2
        return x + o.a + o.b

    compiled = ember.compile(f, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(obj, torch.ones(2)), f(ref, torch.ones(2)))
    assert obj.stores == ref.stores == 2 and obj.a == 1 and obj.b == 2


def test_a_hook_that_raises_raises_as_in_eager():
    def f(o, x):
        o.new = "not an int"
        return x + 1

    with pytest.raises(TypeError, match="must be an int"):
        ember.compile(f, backend="eager")(Aliased(), torch.ones(2))


def test_pretrained_config_store_is_captured():
    transformers = pytest.importorskip("transformers")
    cfg, ref = (transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=37, vocab_size=99) for _ in range(2))

    def f(config, x):
        if config.problem_type is None:
            config.problem_type = "single_label_classification"
        return x * 2 if config.problem_type == "single_label_classification" else x

    x = torch.randn(3)
    backend, graphs = _counting()
    compiled = ember.compile(f, backend=backend, fullgraph=True)
    torch.testing.assert_close(compiled(cfg, x), f(ref, x))
    assert cfg.problem_type == ref.problem_type == "single_label_classification"
    torch.testing.assert_close(compiled(cfg, x), f(ref, x))  # the guard sees the new value
    assert len(graphs) == 2
