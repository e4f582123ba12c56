"""Every architecture of the installed transformers' auto mappings as a zoo model: one generic
shrinker builds each from its own config class with tiny sizes (hidden ~32, 2 layers, 2-4 heads
dividing hidden, intermediate 37, vocab 99, 64 positions, 32x32 images of 8x8 patches, every
dropout 0), walking nested sub-configs (``text_config``, ``vision_config``...). There is no
per-model code: only ALIASES, a table of the attribute names configs give to the same size.
An architecture the shrinker cannot build (offline, from its config class) is listed with its
exception's one-line reason (``Arch.error``).

``registry_models(["causal_lm", "sequence_classification"])`` gives the ``Arch`` entries;
``Arch.zoo`` is the ``ZooModel`` the harness of zoo_harness.py runs unchanged."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import torch

from zoo_models import VOCAB, ZooModel
from zoo_models import inputs as zoo_inputs

# mapping short name -> (transformers' name of the mapping, the zoo kind its models are called as)
MAPPINGS: dict[str, tuple[str, str]] = {
    "causal_lm": ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "decoder"),
    "masked_lm": ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "masked-lm"),
    "sequence_classification": ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "encoder"),
    "seq2seq_lm": ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "encoder-decoder"),
    "image_classification": ("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "vision"),
    "audio_classification": ("MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "audio"),
    "ctc": ("MODEL_FOR_CTC_MAPPING_NAMES", "ctc"),
}

HIDDEN, HEADS, KV_HEADS, INTERMEDIATE, LAYERS, POSITIONS = 32, 4, 2, 37, 2, 64
IMAGE, PATCH, CHANNELS = 32, 8, 3
EXPERTS, EXPERTS_PER_TOKEN = 4, 2

# The one table of names: each size, under every name configs give it. Scalars are set to the
# value; lists (per-stage sizes of hierarchical vision models) keep their length, each entry set
# by the rule of the same name in LIST_RULES.
ALIASES: dict[str, tuple[str, ...]] = {
    "hidden": ("hidden_size", "d_model", "n_embd", "dim", "embed_dim", "word_embed_proj_dim", "embedding_size",
               "n_embed", "model_dim", "emb_dim", "embedding_dim", "projection_dim", "hidden_dim_size",
               "text_embed_dim", "vision_embed_dim", "encoder_hidden_size", "decoder_hidden_size",
               "classifier_proj_size", "output_hidden_size"),
    "layers": ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
               "num_decoder_layers", "num_encoder_layers", "depth", "num_blocks"),
    "heads": ("num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads",
              "decoder_attention_heads", "attention_heads", "num_attention_heads_per_layer", "mamba_n_heads"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "multi_query_group_num", "n_head_kv",
                 "num_key_value_groups_heads"),
    "head_dim": ("head_dim", "d_head", "d_kv", "kv_channels", "attention_head_dim", "head_size", "qk_head_dim",
                 "v_head_dim", "qk_nope_head_dim"),
    "intermediate": ("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "n_inner",
                     "ffn_hidden_size", "hidden_dim", "inner_hidden_size", "mlp_dim", "dense_intermediate_size"),
    # experts' sizes: grouped matmuls want rows of 16 bytes
    "expert_intermediate": ("moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size"),
    "vocab": ("vocab_size", "decoder_vocab_size", "src_vocab_size", "tgt_vocab_size"),
    "positions": ("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "max_sequence_length",
                  "seq_length", "max_seq_length"),
    "image": ("image_size", "img_size"),
    "patch": ("patch_size",),
    "channels": ("num_channels", "in_channels", "in_chans"),
    "experts": ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_topk", "num_experts_per_token", "top_k"),
    "small_rank": ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim"),
    "stage_depths": ("depths",),
    "stage_sizes": ("hidden_sizes", "embed_dims", "dims", "widths", "neck_hidden_sizes",
                    "conv_dim", "tdnn_dim"),  # audio: the waveform's conv feature encoder, x-vector's TDNN
    "stage_heads": ("num_heads",),
    "window": ("window_size", "sliding_window", "attention_window", "context_size"),
}
SCALAR = {"hidden": HIDDEN, "layers": LAYERS, "heads": HEADS, "kv_heads": KV_HEADS, "head_dim": HIDDEN // HEADS,
          "intermediate": INTERMEDIATE, "expert_intermediate": 40, "vocab": VOCAB, "positions": POSITIONS, "image": IMAGE, "patch": PATCH,
          "channels": CHANNELS, "experts": EXPERTS, "experts_per_token": EXPERTS_PER_TOKEN, "small_rank": 8,
          "window": 4}
LIST_RULES = {"stage_depths": lambda i, v: 1, "stage_sizes": lambda i, v: 32,
              "stage_heads": lambda i, v: 2, "layers": lambda i, v: 1, "heads": lambda i, v: 2,
              "window": lambda i, v: 4, "intermediate": lambda i, v: INTERMEDIATE}
NAME_OF = {name: rule for rule, names in ALIASES.items() for name in names}

# config keys never shrunk: derived bookkeeping, not sizes
_KEEP = {"id2label", "label2id", "transformers_version", "architectures", "_name_or_path", "model_type"}
# derived from the sizes by ``__init__`` when left out: backbone stage bookkeeping
_DERIVED = {"out_features", "out_indices", "stage_names"}


def _random(key: str) -> bool:
    """A probability of something random in training: dropout, layer drop, drop path, and
    SpecAugment's masking of audio frames and features (``mask_time_prob``...)."""
    return "drop" in key or (key.startswith("mask_") and key.endswith("_prob"))


def _layer_count(d: dict) -> int | None:
    for name in ALIASES["layers"]:
        if isinstance(d.get(name), int):
            return d[name]
    return None


def shrink_dict(d: dict, num_labels: int | None) -> dict:
    """``d`` (a config's ``to_dict()``) with every known size tiny, every dropout 0, and lists
    as long as the layer count (``layer_types``...) cut to LAYERS entries; nested configs
    (dicts with a ``model_type``) shrunk the same way."""
    layers = _layer_count(d)
    out: dict[str, Any] = {}
    for key, value in d.items():
        rule = NAME_OF.get(key)
        if key in _KEEP:
            out[key] = value
        elif key in _DERIVED:
            continue
        elif value is None and rule in ("head_dim", "kv_heads"):  # None: "derive it", given explicitly
            out[key] = SCALAR[rule]
        elif isinstance(value, dict) and ("model_type" in value or key.endswith("_config")):
            out[key] = shrink_dict(value, None)
        elif _random(key) and isinstance(value, float):
            out[key] = 0.0
        elif rule in SCALAR and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[key] = min(value, SCALAR[rule]) if rule in ("experts_per_token", "window", "channels") else SCALAR[rule]
        elif rule in SCALAR and isinstance(value, (list, tuple)) and len(value) == 2 and rule in ("image", "patch") \
                and all(isinstance(v, int) for v in value):
            out[key] = [SCALAR[rule]] * 2
        elif rule in LIST_RULES and isinstance(value, (list, tuple)) and value \
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            out[key] = [LIST_RULES[rule](i, v) for i, v in enumerate(value)]
        elif layers and isinstance(value, list) and len(value) == layers and layers > LAYERS:
            out[key] = value[:LAYERS]
        else:
            out[key] = value
    if isinstance(out.get("rope_parameters"), dict) and "mrope_section" in out["rope_parameters"]:
        # multimodal rotary sections add up to half the head dim
        half = SCALAR["head_dim"] // 2
        out["rope_parameters"] = dict(out["rope_parameters"], mrope_section=[half - 2 * (half // 3), half // 3,
                                                                             half // 3])
    if num_labels is not None:
        out["num_labels"] = num_labels
    return out


def shrink_config(config_class: type, num_labels: int = 2) -> Any:
    """``config_class`` from its defaults shrunk by ``shrink_dict`` (the sizes passed to its
    ``__init__``, so that what it derives from them follows)."""
    d = shrink_dict(config_class().to_dict(), num_labels)
    for key in ("id2label", "label2id"):
        d.pop(key, None)
    d["pad_token_id"], d["bos_token_id"], d["eos_token_id"] = 0, 1, 2
    if d.get("is_encoder_decoder") or "decoder_start_token_id" in d:
        d["decoder_start_token_id"] = 2
    config = config_class(**d)
    _zero_dropouts(config)
    return config


def _zero_dropouts(config: Any, seen: set[int] | None = None) -> None:
    """Every dropout float of the config and its sub-configs 0 (as ``zoo_models._no_dropout``),
    also those ``__init__`` set from other names."""
    seen = seen if seen is not None else set()
    if id(config) in seen:
        return
    seen.add(id(config))
    for key, value in list(vars(config).items()):
        if _random(key) and isinstance(value, float):
            setattr(config, key, 0.0)
        elif hasattr(value, "to_dict") and hasattr(value, "model_type"):
            _zero_dropouts(value, seen)


@dataclasses.dataclass(frozen=True)
class Arch:
    """One architecture of one mapping: ``model_type`` (the registry's key), the model class
    name, and the config class name (None when the config registry has none)."""
    mapping: str
    model_type: str
    model_class: str
    config_class: str | None

    @property
    def name(self) -> str:
        return f"{self.mapping}/{self.model_type}"

    @property
    def kind(self) -> str:
        return MAPPINGS[self.mapping][1]

    @property
    def zoo(self) -> ZooModel:
        make_inputs = None
        if self.kind in ("audio", "ctc"):
            make_inputs = functools.partial(audio_inputs, self)
        elif self.kind == "encoder-decoder" and not _is_encoder_decoder(self.config_class):
            # a decoder-only model of the seq2seq mapping (audio LMs called with text only): a
            # decoder's inputs, labels the input ids
            make_inputs = functools.partial(zoo_inputs, ZooModel(self.name, "decoder", lambda: None))
        return ZooModel(self.name, self.kind, functools.partial(build_arch, self), make_inputs)


@functools.cache
def _is_encoder_decoder(config_class: str | None) -> bool:
    import transformers

    try:
        return bool(getattr(transformers, config_class)().is_encoder_decoder)
    except Exception:  # noqa: BLE001 - no such config: building says why
        return True


def build_arch(arch: Arch) -> torch.nn.Module:
    import transformers

    if arch.config_class is None:
        raise LookupError(f"no config class for {arch.model_type!r} in CONFIG_MAPPING_NAMES")
    config_class = getattr(transformers, arch.config_class)
    model_class = getattr(transformers, arch.model_class)
    config = shrink_config(config_class, num_labels=3 if arch.kind == "vision" else 2)
    if arch.kind == "decoder" and hasattr(config, "is_decoder"):
        config.is_decoder = True  # as AutoModelForCausalLM's users of encoder architectures set it
    if arch.kind != "vision" and getattr(config, "vocab_size", 0) is None:
        config.vocab_size = VOCAB  # None: users set it from their tokenizer (ESM, a CTC head's tokens)
    return model_class(config)


AUDIO_SECONDS = (1.0, 0.75)  # a batch of two clips, the second padded (attention mask 0 over its end)
CTC_LABELS = 5  # tokens of each clip's transcript (the second's last 2 padded with -100)


def audio_inputs(arch: Arch, mode: str) -> dict[str, Any]:
    """What a user passes an audio model: two random clips through the model type's own
    feature extractor (FEATURE_EXTRACTOR_MAPPING_NAMES, from its defaults and the shrunk config's
    values of the same names: ``num_mel_bins``, ``max_length``...), padded, with the attention
    mask where the model's forward takes one; ``labels`` for training (a class per clip, or a
    transcript's tokens per clip for CTC)."""
    import inspect

    import transformers
    from transformers.models.auto import feature_extraction_auto

    name = feature_extraction_auto.FEATURE_EXTRACTOR_MAPPING_NAMES.get(arch.model_type)
    if name is None:
        raise LookupError(f"no feature extractor for {arch.model_type!r} in FEATURE_EXTRACTOR_MAPPING_NAMES")
    fe_class = getattr(transformers, name)
    config = shrink_config(getattr(transformers, arch.config_class), num_labels=2)
    takes = inspect.signature(fe_class.__init__).parameters
    fe = fe_class(**{k: v for k, v in config.to_dict().items() if k in takes and k not in ("self", "kwargs")
                     and isinstance(v, (int, float)) and not isinstance(v, bool)})
    rate = getattr(fe, "sampling_rate", 16000)
    g = torch.Generator().manual_seed(1)
    clips = [torch.randn(int(rate * s), generator=g).mul(0.1).numpy() for s in AUDIO_SECONDS]
    # padded as the extractor pads by default ("max_length": Whisper's 30 s), else to the longer clip
    padding = inspect.signature(fe_class.__call__).parameters.get("padding")
    padding = padding.default if padding is not None and isinstance(padding.default, str) else "longest"
    features = fe(clips, sampling_rate=rate, padding=padding, return_attention_mask=True, return_tensors="pt")
    forward = inspect.signature(getattr(transformers, arch.model_class).forward).parameters
    batch = {k: v for k, v in features.items() if k in forward}
    main = getattr(getattr(transformers, arch.model_class), "main_input_name", "input_values")
    if main not in batch:
        raise TypeError(f"{name} gives {sorted(features)}, {arch.model_class} takes {main!r}")
    if mode == "train":
        if arch.kind == "ctc":
            labels = torch.randint(3, getattr(config, "vocab_size", None) or 32, (len(clips), CTC_LABELS), generator=g)
            labels[1, CTC_LABELS - 2:] = -100
            batch["labels"] = labels
        else:
            batch["labels"] = torch.tensor([0, 1])
    return batch


def registry_models(mappings: list[str] | None = None) -> list[Arch]:
    """Every (mapping, architecture) of ``mappings`` (all of MAPPINGS by default), in the
    registries' order."""
    from transformers.models.auto import configuration_auto, modeling_auto

    archs = []
    for mapping in mappings or list(MAPPINGS):
        for model_type, model_class in getattr(modeling_auto, MAPPINGS[mapping][0]).items():
            if isinstance(model_class, (list, tuple)):
                model_class = model_class[0]
            archs.append(Arch(mapping, model_type, model_class, configuration_auto.CONFIG_MAPPING_NAMES.get(model_type)))
    return archs


def first_line(exc: BaseException) -> str:
    if type(exc).__name__ == "StrictDataclassClassValidationError" and exc.__cause__ is not None:
        exc = exc.__cause__  # the validator's own error, not its wrapper's header
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:160] if text else ''}"


def try_build(arch: Arch) -> str:
    """"" when the architecture builds, else the exception's one-line reason."""
    try:
        build_arch(arch)
    except Exception as exc:  # noqa: BLE001 - a listing reports why
        return first_line(exc)
    return ""


if __name__ == "__main__":
    import sys
    import warnings

    warnings.simplefilter("ignore")
    for arch in registry_models(sys.argv[1:] or None):
        reason = try_build(arch)
        print(f"{arch.name}: {'ok' if not reason else reason}", flush=True)
