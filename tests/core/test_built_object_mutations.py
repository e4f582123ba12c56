"""Objects built inside compiled code over fake tensors (dataclasses, transformers' ModelOutput)
carry every later mutation into what is rebuilt after the graph: attribute and item stores,
deletions, appends to lists they made, whether the object is returned, stored into an outer
object, or read back; and they stay one object. Issue 45, item 1 (CLIP's
``text_outputs.pooler_output = ...``)."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import pytest
import torch
from transformers.modeling_outputs import BaseModelOutputWithPooling, CausalLMOutputWithPast

import ember
from core_helpers import CountingBackend, no_fallback


@dataclasses.dataclass
class Pair:
    a: torch.Tensor
    b: Optional[torch.Tensor] = None
    parts: list = dataclasses.field(default_factory=list)

    def scale(self, k: float) -> "Pair":
        self.a = self.a * k
        return self


@dataclasses.dataclass
class Outer:
    inner: Pair


class Holder:
    pass


def _leaves(value: Any) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _leaves(v)]
    if dataclasses.is_dataclass(value):
        return [t for f in dataclasses.fields(value) for t in _leaves(getattr(value, f.name))]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _leaves(v)]
    return [value]


def _assert_same(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves), (got, want)
    for g, w in zip(got_leaves, want_leaves):
        if isinstance(w, torch.Tensor):
            torch.testing.assert_close(g, w)
        else:
            assert g == w


def _store_then_read(x):
    d = Pair(x)
    d.a = x * 2
    return d.a


def _store_returned(x):
    d = Pair(x)
    d.b = x + 1
    return d


def _output_attribute(x):
    out = BaseModelOutputWithPooling(last_hidden_state=x)
    out.pooler_output = x.sum(0)  # CLIP's text_outputs.pooler_output = ...
    return out


def _output_new_item(x):
    out = BaseModelOutputWithPooling(last_hidden_state=x)
    out["pooler_output"] = x * 3
    return out, out.pooler_output


def _output_existing_item(x):
    out = BaseModelOutputWithPooling(last_hidden_state=x)
    out["last_hidden_state"] = x - 1
    return out.last_hidden_state, out[0], out.to_tuple()


def _output_loss_set_later(x):
    out = CausalLMOutputWithPast(logits=x)
    out.loss = x.mean()
    return out, len(out), out.to_tuple()


def _default_factory_list(x):
    d = Pair(x)
    d.parts.append(x + 1)
    d.parts.extend([x + 2])
    return d, x * len(d.parts)


def _stored_into_an_input(x, holder):
    d = Pair(x)
    holder.pair = d
    d.a = x * 5
    return holder.pair.a


def _stored_into_an_outer_object(x):
    d = Pair(x)
    outer = Outer(d)
    d.a = x + 7
    return outer


def _method_mutates(x):
    d = Pair(x)
    d.scale(3.0)
    return d.a, d


def _delete_and_setattr(x):
    d = Pair(x)
    d.extra = x * 2
    y = d.extra
    del d.extra
    setattr(d, "a", x * 4)
    object.__setattr__(d, "b", x * 6)
    return y, hasattr(d, "extra"), d


def _list_shared_with_the_object(x):
    parts = [x]
    d = Pair(x, parts=parts)
    parts.append(x * 2)
    d.parts.append(x * 3)
    return len(d.parts), parts, d


CASES = [_store_then_read, _store_returned, _output_attribute, _output_new_item, _output_existing_item,
         _output_loss_set_later, _default_factory_list, _stored_into_an_outer_object, _method_mutates,
         _delete_and_setattr, _list_shared_with_the_object]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_mutation_of_an_object_built_inside_reaches_the_result(fn):
    x = torch.randn(3)
    backend = CountingBackend()
    with no_fallback():
        compiled = ember.compile(fn, backend=backend, fullgraph=True)
        got, again = compiled(x), compiled(x + 1)
    _assert_same(got, fn(x))
    _assert_same(again, fn(x + 1))
    theirs = CountingBackend()
    torch._dynamo.reset()
    torch.compile(fn, backend=theirs)(x)
    assert backend.count == theirs.count == 1


def test_stored_into_an_input_object():
    x = torch.randn(3)
    holder = Holder()
    with no_fallback():
        got = ember.compile(_stored_into_an_input, backend="eager", fullgraph=True)(x, holder)
    torch.testing.assert_close(got, x * 5)
    torch.testing.assert_close(holder.pair.a, x * 5)
    assert type(holder.pair) is Pair


def test_the_object_stays_one_object():
    def fn(x):
        d = Pair(x)
        d.a = x * 2
        return d, d, Outer(d)

    got = ember.compile(fn, backend="eager", fullgraph=True)(torch.randn(2))
    assert got[0] is got[1] and got[2].inner is got[0]


def test_mutations_before_a_graph_break_are_not_lost():
    def fn(x):
        d = Pair(x)
        d.a = x * 2
        print("", end="")  # a graph break
        d.b = d.a + 1
        return d

    x = torch.randn(3)
    _assert_same(ember.compile(fn, backend="eager")(x), fn(x))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_issue_repro_on_every_backend(backend):
    x = torch.ones(2)
    torch.testing.assert_close(ember.compile(_store_then_read, backend=backend)(x), x * 2)


def test_clip_contrastive_loss_matches_eager():
    from transformers import CLIPConfig, CLIPModel

    text = dict(vocab_size=99, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
                max_position_embeddings=16, bos_token_id=0, eos_token_id=2, pad_token_id=1)
    vision = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4, image_size=16,
                  patch_size=8)
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=24)).eval()
    ids, pixels = torch.randint(3, 99, (3, 7)), torch.randn(3, 3, 16, 16)
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(model, backend=backend)(input_ids=ids, pixel_values=pixels, return_loss=True)
    want = model(input_ids=ids, pixel_values=pixels, return_loss=True)
    assert backend.count == 1
    assert got.text_embeds.shape == want.text_embeds.shape == (3, 24)
    torch.testing.assert_close(got.loss, want.loss)
    torch.testing.assert_close(got.logits_per_image, want.logits_per_image)


def test_a_mutable_builtin_made_inside_is_new_at_each_call():
    def fn(x):
        buffer = bytearray(2)
        buffer[0] = 1
        return buffer, x + 1

    compiled = ember.compile(fn, backend="eager")
    first = compiled(torch.ones(1))[0]
    first[1] = 9  # the caller's object: the next call must not hand it out again
    second = compiled(torch.ones(1))[0]
    assert first is not second and second == bytearray(b"\x01\x00")
