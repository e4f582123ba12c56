"""HF decoders with their default ``use_cache=True``: the cache built inside the compiled call
comes back as a real ``DynamicCache``, and a cache passed in is updated as eager updates it."""
import warnings

import pytest
import torch

import ember

transformers = pytest.importorskip("transformers")


def _llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=99, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64))


def _qwen2():
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        vocab_size=99, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64))


def _gpt2():
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=2,
                                                                n_positions=64, bos_token_id=0, eos_token_id=0))


def _counting():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend, graphs


def _assert_cache_equal(got, want):
    assert type(got) is type(want)
    assert len(got.layers) == len(want.layers)
    for g, w in zip(got.layers, want.layers):
        assert type(g) is type(w)
        assert g.is_initialized == w.is_initialized
        torch.testing.assert_close(g.keys, w.keys)
        torch.testing.assert_close(g.values, w.values)
    assert got.get_seq_length() == want.get_seq_length()


@pytest.mark.parametrize("build", [_llama, _qwen2, _gpt2], ids=["llama", "qwen2", "gpt2"])
def test_decoder_cache_made_inside_and_passed_back_in(build):
    torch.manual_seed(0)
    model = build().eval()
    ids = torch.randint(0, 99, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[0, :2] = 0

    def step(input_ids, attention_mask, past_key_values=None):
        with torch.no_grad():
            return model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values)

    backend, graphs = _counting()
    fast = ember.compile(step, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fast(ids, mask)
    assert not [w for w in caught if "ember" in str(w.message)]  # no eager fallback
    want = step(ids, mask)
    assert len(graphs) > 0
    torch.testing.assert_close(got.logits, want.logits)
    _assert_cache_equal(got.past_key_values, want.past_key_values)

    ref_backend, ref_graphs = _counting()
    torch._dynamo.reset()
    torch.compile(step, backend=ref_backend)(ids, mask)
    assert len(graphs) <= len(ref_graphs)

    # second step: the cache goes back in, and is updated in place as in eager
    next_tok = want.logits[:, -1:].argmax(-1)
    mask2 = torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], dim=1)
    cache_got, cache_want = got.past_key_values, want.past_key_values
    first_graphs = len(graphs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got2 = fast(next_tok, mask2, cache_got)
    assert not [w for w in caught if "ember" in str(w.message)]
    assert len(graphs) > first_graphs  # the second step is captured too
    want2 = step(next_tok, mask2, cache_want)
    torch.testing.assert_close(got2.logits, want2.logits)
    assert got2.past_key_values is cache_got
    _assert_cache_equal(cache_got, cache_want)
    assert cache_got.get_seq_length() == 7


def test_static_cache_passed_in_is_filled_in_place():
    torch.manual_seed(0)
    model = _llama().eval()
    ids = torch.randint(0, 99, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.long)

    def step(input_ids, attention_mask, past_key_values):
        with torch.no_grad():
            return model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values)

    cache_got = transformers.StaticCache(config=model.config, max_cache_len=16)
    cache_want = transformers.StaticCache(config=model.config, max_cache_len=16)
    backend, graphs = _counting()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ember.compile(step, backend=backend)(ids, mask, cache_got)
    assert not [w for w in caught if "ember" in str(w.message)]
    want = step(ids, mask, cache_want)
    assert len(graphs) == 1
    torch.testing.assert_close(got.logits, want.logits)
    assert got.past_key_values is cache_got
    _assert_cache_equal(cache_got, cache_want)


def test_each_call_returns_its_own_cache_passed_in():
    """A second generate() passes a new DynamicCache: the compiled call must return that one,
    not the object of the call it was captured on (which the next step would then extend)."""
    torch.manual_seed(0)
    model = _gpt2().eval()
    ids = torch.randint(0, 99, (2, 5))
    mask = torch.ones(2, 5, dtype=torch.long)

    def step(input_ids, attention_mask, cache):
        with torch.no_grad():
            return model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)

    backend, graphs = _counting()
    fast = ember.compile(step, backend=backend)
    for _ in range(3):
        cache_got, cache_want = transformers.DynamicCache(config=model.config), transformers.DynamicCache(config=model.config)
        got, want = fast(ids, mask, cache_got), step(ids, mask, cache_want)
        assert got.past_key_values is cache_got
        torch.testing.assert_close(got.logits, want.logits)
        _assert_cache_equal(cache_got, cache_want)
    assert len(graphs) == 1
