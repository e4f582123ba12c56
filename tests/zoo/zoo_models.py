"""The zoo's models: HuggingFace transformers architectures from tiny configs with random weights
(no downloads), each with the inputs its users give it (tokenizer-style ``input_ids`` +
``attention_mask`` with padding, ``labels`` for training, ``pixel_values`` for vision)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

VOCAB = 99
BATCH, SEQ, PAD = 2, 8, 3  # the second row of every text batch has PAD padding tokens


@dataclasses.dataclass(frozen=True)
class ZooModel:
    name: str
    kind: str  # "encoder", "decoder", "encoder-decoder", "vision", "masked-lm" (an encoder with token labels),
    # "audio" (clip labels) or "ctc" (token labels over the frames)
    build: Callable[[], torch.nn.Module]
    # the model's own inputs for a mode, where its kind's defaults do not fit (audio: from the
    # model's feature extractor, registry.py)
    make_inputs: Callable[[str], dict[str, Any]] | None = None

    @property
    def modes(self) -> tuple[str, ...]:
        return ("eval", "train", "generate") if self.kind == "decoder" else ("eval", "train")


def _no_dropout(config: Any) -> Any:
    """Every dropout, layer-drop and drop-path probability of a config set to 0, so that a
    training step is deterministic and compiled and eager runs can be compared."""
    for key, value in config.to_dict().items():
        if ("drop" in key) and isinstance(value, float):
            setattr(config, key, 0.0)
    return config


def _hf(model_class: str, config_class: str, **config: Any) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        import transformers

        cfg = _no_dropout(getattr(transformers, config_class)(**config))
        return getattr(transformers, model_class)(cfg)

    return build


_TEXT = dict(vocab_size=VOCAB, pad_token_id=0)
_ENC = dict(_TEXT, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
            max_position_embeddings=64, num_labels=2)
_DEC = dict(_TEXT, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=64, bos_token_id=1, eos_token_id=2)
_S2S = dict(_TEXT, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=64,
            bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
_IMG = dict(num_channels=3, num_labels=3)

ZOO: list[ZooModel] = [
    # encoders: sequence classification
    ZooModel("bert", "encoder", _hf("BertForSequenceClassification", "BertConfig", **_ENC)),
    ZooModel("distilbert", "encoder", _hf(
        "DistilBertForSequenceClassification", "DistilBertConfig", vocab_size=VOCAB, pad_token_id=0, dim=32,
        n_layers=2, n_heads=2, hidden_dim=37, max_position_embeddings=64, num_labels=2)),
    ZooModel("roberta", "encoder", _hf("RobertaForSequenceClassification", "RobertaConfig", **_ENC)),
    ZooModel("albert", "encoder", _hf("AlbertForSequenceClassification", "AlbertConfig", embedding_size=16, **_ENC)),
    ZooModel("electra", "encoder", _hf("ElectraForSequenceClassification", "ElectraConfig", embedding_size=16, **_ENC)),
    ZooModel("deberta-v2", "encoder", _hf("DebertaV2ForSequenceClassification", "DebertaV2Config", **_ENC)),
    # decoders: causal language models
    ZooModel("gpt2", "decoder", _hf("GPT2LMHeadModel", "GPT2Config", vocab_size=VOCAB, n_embd=32, n_layer=2,
                                      n_head=4, n_inner=37, n_positions=64, pad_token_id=0, bos_token_id=1,
                                      eos_token_id=2)),
    ZooModel("gpt-neo", "decoder", _hf("GPTNeoForCausalLM", "GPTNeoConfig", vocab_size=VOCAB, hidden_size=32,
                                         num_layers=2, attention_types=[[["global", "local"], 1]], num_heads=4,
                                         intermediate_size=37, window_size=4, max_position_embeddings=64,
                                         pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    ZooModel("opt", "decoder", _hf("OPTForCausalLM", "OPTConfig", vocab_size=VOCAB, hidden_size=32,
                                     num_hidden_layers=2, num_attention_heads=4, ffn_dim=37, word_embed_proj_dim=32,
                                     max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    ZooModel("bloom", "decoder", _hf("BloomForCausalLM", "BloomConfig", vocab_size=VOCAB, hidden_size=32, n_layer=2,
                                       n_head=4, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    ZooModel("llama", "decoder", _hf("LlamaForCausalLM", "LlamaConfig", num_key_value_heads=2, **_DEC)),
    ZooModel("mistral", "decoder", _hf("MistralForCausalLM", "MistralConfig", num_key_value_heads=2,
                                         sliding_window=4, **_DEC)),
    ZooModel("qwen2", "decoder", _hf("Qwen2ForCausalLM", "Qwen2Config", num_key_value_heads=2, **_DEC)),
    ZooModel("phi", "decoder", _hf("PhiForCausalLM", "PhiConfig", **_DEC)),
    ZooModel("gemma", "decoder", _hf("GemmaForCausalLM", "GemmaConfig", num_key_value_heads=2, head_dim=8, **_DEC)),
    # encoder-decoders: conditional generation
    ZooModel("t5", "encoder-decoder", _hf("T5ForConditionalGeneration", "T5Config", vocab_size=VOCAB, d_model=32,
                                            d_kv=8, d_ff=37, num_layers=2, num_heads=4, pad_token_id=0,
                                            eos_token_id=2, decoder_start_token_id=0)),
    ZooModel("bart", "encoder-decoder", _hf("BartForConditionalGeneration", "BartConfig", **_S2S)),
    ZooModel("marian", "encoder-decoder", _hf("MarianMTModel", "MarianConfig", **_S2S)),
    # vision: image classification
    ZooModel("vit", "vision", _hf("ViTForImageClassification", "ViTConfig", image_size=32, patch_size=8,
                                    hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=37, **_IMG)),
    ZooModel("convnext", "vision", _hf("ConvNextForImageClassification", "ConvNextConfig", hidden_sizes=[8, 16],
                                         depths=[1, 1], num_stages=2, patch_size=4, **_IMG)),
    ZooModel("resnet", "vision", _hf("ResNetForImageClassification", "ResNetConfig", embedding_size=8,
                                       hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic", **_IMG)),
    ZooModel("swin", "vision", _hf("SwinForImageClassification", "SwinConfig", image_size=32, patch_size=4,
                                     embed_dim=8, depths=[1, 1], num_heads=[2, 2], window_size=4, **_IMG)),
    ZooModel("mobilenet-v2", "vision", _hf("MobileNetV2ForImageClassification", "MobileNetV2Config",
                                             image_size=32, depth_multiplier=0.25, **_IMG)),
    ZooModel("regnet", "vision", _hf("RegNetForImageClassification", "RegNetConfig", embedding_size=8,
                                       hidden_sizes=[8, 16], depths=[1, 1], groups_width=8, **_IMG)),
]

BY_NAME = {m.name: m for m in ZOO}


def _text_batch(left_padding: bool) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    pad = slice(0, PAD) if left_padding else slice(SEQ - PAD, SEQ)
    ids[1, pad] = 0
    mask[1, pad] = 0
    return ids, mask


def inputs(model: ZooModel, mode: str) -> dict[str, Any]:
    """The keyword arguments a user passes for ``mode`` ("eval", "train" or "generate")."""
    if model.make_inputs is not None:
        return model.make_inputs(mode)
    g = torch.Generator().manual_seed(1)
    if model.kind == "vision":
        batch: dict[str, Any] = {"pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g)}
        if mode == "train":
            batch["labels"] = torch.tensor([0, 2])
        return batch
    ids, mask = _text_batch(left_padding=model.kind == "decoder")
    batch = {"input_ids": ids, "attention_mask": mask}
    if mode == "train":
        if model.kind == "encoder":
            batch["labels"] = torch.tensor([0, 1])
        elif model.kind in ("decoder", "masked-lm"):
            batch["labels"] = ids.masked_fill(mask == 0, -100)
        else:
            batch["labels"] = torch.randint(3, VOCAB, (BATCH, 5), generator=g)
    elif model.kind == "encoder-decoder":
        batch["decoder_input_ids"] = torch.randint(3, VOCAB, (BATCH, 5), generator=g)
    return batch


def build(model: ZooModel, mode: str) -> torch.nn.Module:
    torch.manual_seed(0)
    module = model.build()
    return module.train() if mode == "train" else module.eval()
