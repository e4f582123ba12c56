"""The zoo's one table of known capture shortfalls: (model, mode) -> ember's first break reason
(as ``ember.explain`` reports it) or why it makes more graphs than torch.compile. Each entry is a
strict expected failure of tests/zoo/test_zoo.py: when capture is fixed the test passes, fails
as XPASS, and the entry must go, so the table only shrinks. Results are never listed here: a
result that differs from eager is a failure.

CI_SHARE is the fixed share of models CI runs (one or two per family, about a minute on a 2-core
machine);
``EMBER_ZOO=all`` runs every model."""
from __future__ import annotations

_PROBLEM_TYPE = ("assignment to attribute 'problem_type' of a {}Config (custom __setattr__ or a class): "
                 "the loss of *ForSequenceClassification / *ForImageClassification sets "
                 "config.problem_type on the first call")
_CONFIG_COPY = ("call to dict.get is not supported: EncoderDecoderCache's DynamicCache(config=...) "
                "copies the config (copy.deepcopy, to_dict), which capture walks into")
_GENERATE_RECOMPILE = ("no break, 4 graphs vs torch.compile's 3: with dynamic shapes the other decoders' "
                       "generate compiles 3 graphs as torch.compile does; mistral's fourth is not yet explained")

SHORTFALLS: dict[tuple[str, str], str] = {
    **{(name, "train"): _PROBLEM_TYPE.format(config) for name, config in [
        ("bert", "Bert"), ("distilbert", "DistilBert"), ("roberta", "Roberta"), ("albert", "Albert"),
        ("electra", "Electra"), ("vit", "ViT"), ("convnext", "ConvNext"), ("resnet", "ResNet"),
        ("swin", "Swin"), ("mobilenet-v2", "MobileNetV2"), ("regnet", "RegNet")]},
    ("deberta-v2", "eval"): ("call to transformers.activations.GELUActivation is not supported "
                             "(not a torch op, not Python code to inline)"),
    ("deberta-v2", "train"): ("call to transformers.activations.GELUActivation is not supported "
                              "(not a torch op, not Python code to inline)"),
    ("gpt2", "train"): ("call to transformers.utils.logging.warning_once is not supported "
                        "(not a torch op, not Python code to inline)"),
    **{("bloom", mode): "call to _FunctionBase.apply is not supported (torch.autograd.Function)"
       for mode in ("eval", "train")},
    **{(name, "eval"): _CONFIG_COPY for name in ("t5", "bart", "marian")},
    ("t5", "train"): _CONFIG_COPY,
    ("mistral", "generate"): _GENERATE_RECOMPILE,
    ("bloom", "generate"): "call to _FunctionBase.apply is not supported (torch.autograd.Function)",
}

CI_SHARE: tuple[str, ...] = ("bert", "deberta-v2", "gpt2", "llama", "t5", "bart", "vit", "swin")
