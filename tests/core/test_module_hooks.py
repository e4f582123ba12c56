"""Module hooks: forward hooks and pre-hooks are inlined into the graph as ``nn.Module.__call__``
runs them; backward hooks are never dropped (the call runs eagerly, with one warning)."""
from __future__ import annotations

import warnings

import pytest
import torch
import transformers

import ember
from core_helpers import CountingBackend, no_fallback


def _torch_compile_count(fn, *args, **kwargs) -> int:
    import torch._dynamo

    torch._dynamo.reset()
    backend = CountingBackend()
    torch.compile(fn, backend=backend)(*args, **kwargs)
    return backend.count


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 2)

    def forward(self, x, scale=1.0):
        return self.b(torch.relu(self.a(x)) * scale)


def _add_hooks(net: Net, seen: list) -> list:
    def pre(mod, args):  # replaces the input
        return (args[0] * 2,)

    def pre_kwargs(mod, args, kwargs):  # replaces args and kwargs
        return args, {**kwargs, "scale": 0.5}

    def post(mod, args, output):  # replaces the output
        return output + args[0].sum()

    def post_kwargs(mod, args, kwargs, output):
        return output * kwargs["scale"]

    def observe(mod, args, output):  # returns None: the output stays
        seen.append(type(mod).__name__)

    return [net.a.register_forward_pre_hook(pre), net.register_forward_pre_hook(pre_kwargs, with_kwargs=True),
            net.a.register_forward_hook(post), net.register_forward_hook(post_kwargs, with_kwargs=True),
            net.b.register_forward_hook(observe)]


def test_forward_hooks_and_pre_hooks_are_one_graph_with_eager_values_and_grads():
    torch.manual_seed(0)
    net, seen = Net(), []
    _add_hooks(net, seen)
    x = torch.randn(3, 4, requires_grad=True)
    expected = net(x, scale=3.0)
    expected.sum().backward()
    grads = [x.grad.clone()] + [p.grad.clone() for p in net.parameters()]
    x.grad = None
    net.zero_grad(set_to_none=True)
    backend = CountingBackend()
    with no_fallback():
        out = ember.compile(net, backend=backend)(x, scale=3.0)
        out.sum().backward()
    torch.testing.assert_close(out, expected)
    for got, want in zip([x.grad] + [p.grad for p in net.parameters()], grads):
        torch.testing.assert_close(got, want)
    assert seen == ["Linear", "Linear"]  # the observing hook's append happened once per call
    assert backend.count == 1 <= _torch_compile_count(net, x, scale=3.0)


def test_removing_a_hook_recompiles():
    net = Net()
    handles = _add_hooks(net, [])
    compiled = ember.compile(net, backend="eager")
    x = torch.randn(3, 4)
    torch.testing.assert_close(compiled(x), net(x))
    handles[2].remove()
    torch.testing.assert_close(compiled(x), net(x))


def test_global_hooks_are_inlined():
    net = Net()
    calls = []

    def pre(mod, args):
        calls.append(type(mod).__name__)
        return None

    def post(mod, args, output):
        return output * 2 if isinstance(mod, torch.nn.Linear) else output

    handles = [torch.nn.modules.module.register_module_forward_pre_hook(pre),
               torch.nn.modules.module.register_module_forward_hook(post)]
    try:
        x = torch.randn(3, 4)
        expected = net(x)
        backend = CountingBackend()
        with no_fallback():
            out = ember.compile(net, backend=backend)(x)
        assert backend.count == 1
    finally:
        for h in handles:
            h.remove()
    torch.testing.assert_close(out, expected)


def test_a_backward_hook_is_kept_and_said_once():
    net = Net()
    grads_seen = []
    net.b.register_full_backward_hook(lambda mod, gin, gout: grads_seen.append(gout[0].shape))
    model = torch.nn.Sequential(net, torch.nn.ReLU())
    compiled = ember.compile(model, backend="eager")
    x = torch.randn(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            out = compiled(x)
            out.sum().backward()
    torch.testing.assert_close(out, model(x))
    assert grads_seen == [torch.Size([3, 2])] * 2  # never dropped
    messages = [str(w.message) for w in caught if str(w.message).startswith("ember:")]
    assert len(messages) == 1 and "backward hooks" in messages[0], messages


def test_hf_model_with_a_forward_hook_captures_like_torch_compile():
    """An attention-output probe, as users register on HF models."""
    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, vocab_size=99)
    model = transformers.BertModel(config).eval()
    probes = []
    model.encoder.layer[0].attention.register_forward_hook(lambda mod, args, out: probes.append(out[0]))
    input_ids = torch.randint(0, 99, (2, 7))
    attention_mask = torch.ones(2, 7, dtype=torch.long)
    attention_mask[1, 5:] = 0
    expected = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    backend = CountingBackend()
    with no_fallback():
        out = ember.compile(model, backend=backend)(input_ids=input_ids, attention_mask=attention_mask)
    torch.testing.assert_close(out.last_hidden_state, expected)
    assert backend.count <= _torch_compile_count(model, input_ids=input_ids, attention_mask=attention_mask)
    assert backend.count == 1


@pytest.mark.parametrize("replace", [False, True])
def test_a_pre_hook_returning_a_single_tensor_replaces_the_only_argument(replace):
    lin = torch.nn.Linear(4, 4)
    lin.register_forward_pre_hook(lambda mod, args: args[0] + 1 if replace else None)
    x = torch.randn(2, 4)
    with no_fallback():
        torch.testing.assert_close(ember.compile(lambda t: lin(t) * 2, backend="eager")(x), lin(x) * 2)
