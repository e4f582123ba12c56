"""``copy.deepcopy`` of objects that hold no tensor, and methods of real dicts, inside captured
code (HF caches deep-copy the config and rename the copy's attributes)."""
import copy

import pytest
import torch

import ember

GLOBAL_TABLE = {int: "int", str: "str"}  # keys the guards cannot compare by value


class Settings:
    def __init__(self):
        self.encoder_layers = 2
        self.decoder_layers = 3
        self.names = {"a": 1}

    def for_decoder(self):
        out = copy.deepcopy(self)
        for key in list(copy.deepcopy(self).__dict__.keys()):  # a real dict's method, on a copy
            if key.startswith("decoder_"):
                value = getattr(out, key)
                delattr(out, key)
                setattr(out, key[len("decoder_"):], value)
        return out


def _counting():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend, graphs


def test_deepcopy_of_a_config_is_a_constant_and_its_copy_can_be_changed():
    settings, ref = Settings(), Settings()

    def f(s, x):
        dec = s.for_decoder()
        names = copy.deepcopy(s.names)
        names["b"] = 2  # the copied dict is the capture's own
        return x * dec.layers + len(names) + GLOBAL_TABLE.get(type(dec.layers)).__len__(), dec

    x = torch.randn(3)
    backend, graphs = _counting()
    compiled = ember.compile(f, backend=backend, fullgraph=True)
    got, want = compiled(settings, x), f(ref, x)
    torch.testing.assert_close(got[0], want[0])
    assert vars(got[1]) == vars(want[1]) and not hasattr(got[1], "decoder_layers")
    assert vars(settings) == vars(ref) and settings.names == {"a": 1}  # the original is untouched
    assert len(graphs) == 1


def test_reads_of_the_copy_need_no_guards_and_it_is_made_on_every_call(caplog):
    """Whisper's and CLIP's forward (transformers 5) deep-copy the config in ``get_text_config``,
    read a table of the copy (``names``, a dict: guarded as a library's setting would be) and
    rename the copy's attributes. Guards rooted at the copy, an object made anew on every call,
    failed on the call that made them, and every call ran eagerly."""
    import logging

    settings = Settings()

    def f(s, x):
        dec = s.for_decoder()
        return x * dec.layers * len(dec.names)

    backend, graphs = _counting()
    compiled = ember.compile(f, backend=backend)
    with caplog.at_level(logging.WARNING, "ember"):
        for _ in range(3):
            torch.testing.assert_close(compiled(settings, torch.ones(2)), torch.full((2,), 3.0))
    assert "fail on the call that made them" not in caplog.text and len(graphs) == 1
    settings.names["b"] = 2  # the original is guarded: a change is seen
    torch.testing.assert_close(compiled(settings, torch.ones(2)), torch.full((2,), 6.0))


def test_the_copy_follows_changes_of_the_original():
    settings = Settings()

    def f(s, x):
        return x * copy.deepcopy(s).decoder_layers

    compiled = ember.compile(f, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(settings, torch.ones(2)), torch.full((2,), 3.0))
    settings.decoder_layers = 5  # a guard sees it: the next call does not reuse the old copy
    torch.testing.assert_close(compiled(settings, torch.ones(2)), torch.full((2,), 5.0))


def test_deepcopy_of_tensors_is_traced_not_frozen():
    def f(d):
        c = copy.deepcopy(d)
        return c["w"] * 2

    compiled = ember.compile(f, backend="eager")
    for _ in range(2):
        d = {"w": torch.randn(3)}
        torch.testing.assert_close(compiled(d), d["w"] * 2)


def test_deepcopy_sees_stores_made_earlier_in_the_capture():
    settings = Settings()

    def f(s, x):
        s.decoder_layers = 7  # not yet written to the real object when the copy runs
        return x * copy.deepcopy(s).decoder_layers

    got = ember.compile(f, backend="eager")(settings, torch.ones(2))
    torch.testing.assert_close(got, torch.full((2,), 7.0))
    assert settings.decoder_layers == 7


def test_encoder_decoder_cache_built_from_the_config():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.T5Config(vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                                decoder_start_token_id=0)
    model = transformers.T5ForConditionalGeneration(cfg).eval()
    ids = torch.randint(3, 99, (2, 6))
    mask = torch.ones_like(ids)

    def f(ids, mask):
        with torch.no_grad():
            return model(input_ids=ids, attention_mask=mask, decoder_input_ids=ids[:, :3]).logits

    backend, graphs = _counting()
    got = ember.compile(f, backend=backend, fullgraph=True)(ids, mask)
    torch.testing.assert_close(got, f(ids, mask))
    assert len(graphs) == 1
