"""The zoo's one table of known capture shortfalls: (model, mode) -> ember's first break reason
(as ``ember.explain`` reports it) or why it makes more graphs than torch.compile. Each entry is a
strict expected failure of tests/zoo/test_zoo.py: when capture is fixed the test passes, fails
as XPASS, and the entry must go, so the table only shrinks. Results are never listed here: a
result that differs from eager is a failure.

CI_SHARE is the fixed share of models CI runs (about 2.5 minutes on a 2-core machine);
``EMBER_ZOO=all`` runs every model."""
from __future__ import annotations

_PROBLEM_TYPE = ("assignment to attribute 'problem_type' of a {}Config (custom __setattr__ or a class): "
                 "the loss of *ForSequenceClassification / *ForImageClassification sets "
                 "config.problem_type on the first call")
_DYNAMIC_CACHE = ("call to transformers.cache_utils.DynamicCache is not supported "
                  "(not a torch op, not Python code to inline)")
_GENERATE_RECOMPILE = ("no break, 4 graphs vs torch.compile's 3: each of generate's 4 forward calls compiles; "
                       "the second decode step (attention_mask (2, 10), KV cache length 9) compiles with "
                       "static sizes where torch.compile makes them dynamic and reuses that graph")

SHORTFALLS: dict[tuple[str, str], str] = {
    **{(name, "train"): _PROBLEM_TYPE.format(config) for name, config in [
        ("bert", "Bert"), ("distilbert", "DistilBert"), ("roberta", "Roberta"), ("albert", "Albert"),
        ("electra", "Electra"), ("vit", "ViT"), ("convnext", "ConvNext"), ("resnet", "ResNet"),
        ("swin", "Swin"), ("mobilenet-v2", "MobileNetV2"), ("regnet", "RegNet")]},
    ("deberta-v2", "eval"): ("call to transformers.activations.GELUActivation is not supported "
                             "(not a torch op, not Python code to inline)"),
    ("deberta-v2", "train"): ("call to transformers.activations.GELUActivation is not supported "
                              "(not a torch op, not Python code to inline)"),
    **{(name, mode): _DYNAMIC_CACHE for name in ("gpt2", "gpt-neo", "opt", "bloom", "llama", "mistral",
                                                  "qwen2", "phi", "gemma") for mode in ("eval", "train")},
    **{(name, "eval"): _DYNAMIC_CACHE for name in ("t5", "bart", "marian")},
    ("t5", "train"): _DYNAMIC_CACHE,
    **{(name, "generate"): _GENERATE_RECOMPILE for name in ("gpt2", "gpt-neo", "opt", "llama", "mistral",
                                                             "qwen2", "phi", "gemma")},
    ("bloom", "generate"): ("torch.autograd.Function.apply: "
                            "torch._C._are_functorch_transforms_active may change torch's global state"),
}

CI_SHARE: tuple[str, ...] = ("bert", "distilbert", "deberta-v2", "gpt2", "llama", "qwen2", "phi", "gemma",
                             "t5", "bart", "marian", "vit", "convnext", "resnet", "swin", "mobilenet-v2",
                             "regnet")
