"""How the zoo runs a model: the user's call for each mode (eval under ``no_grad``, a training
step with ``loss.backward()``, ``generate`` with a compiled forward), compiled by ember or by
torch.compile, with what each captured (graphs, graph breaks, eager fallbacks) and the results
(outputs, tokens, gradients) to compare with eager."""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import torch

import ember
import ember.compiled
from zoo_models import ZooModel, build, inputs

MAX_NEW_TOKENS = 4


def run_eval(model: torch.nn.Module, **batch: Any) -> Any:
    with torch.no_grad():
        return model(**batch)


def run_train(model: torch.nn.Module, **batch: Any) -> Any:
    out = model(**batch)
    out.loss.backward()
    return out


@dataclasses.dataclass
class Capture:
    graphs: int
    breaks: int
    fallback: bool = False
    first_reason: str = ""


@dataclasses.dataclass
class Result:
    outputs: list[torch.Tensor]
    grads: dict[str, torch.Tensor | None]
    capture: Capture | None = None


class CaptureShortfall(Exception):
    """ember captured less than torch.compile (more graphs or breaks) or fell back to eager."""


def leaves(obj: Any) -> list[torch.Tensor]:
    """The tensors of a model's output: ModelOutputs, tuples, dicts and KV caches."""
    if isinstance(obj, torch.Tensor):
        return [obj.detach()]
    if hasattr(obj, "layers") and hasattr(obj, "get_seq_length"):  # a transformers Cache
        return [t for layer in obj.layers for t in leaves([getattr(layer, "keys", None),
                                                            getattr(layer, "values", None)])]
    if hasattr(obj, "self_attention_cache"):  # EncoderDecoderCache
        return leaves(obj.self_attention_cache) + leaves(obj.cross_attention_cache)
    if isinstance(obj, dict):  # ModelOutput is an OrderedDict of its non-None fields
        return [t for value in obj.values() for t in leaves(value)]
    if isinstance(obj, (list, tuple)):
        return [t for value in obj for t in leaves(value)]
    return []


def _call(zoo: ZooModel, mode: str, compile_fn: Callable[[Callable], Callable] | None, device: str = "cpu",
          dtype: torch.dtype | None = None) -> Result:
    model = build(zoo, mode).to(device=device, dtype=dtype)
    batch = {k: v.to(device=device, dtype=dtype if v.is_floating_point() else None) if isinstance(v, torch.Tensor)
             else v for k, v in inputs(zoo, mode).items()}
    wrap = compile_fn or (lambda fn: fn)
    if mode == "generate":
        model.forward = wrap(model.forward)
        out = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"],
                             max_new_tokens=MAX_NEW_TOKENS, do_sample=False)
        del model.forward
    else:
        out = wrap(run_eval if mode == "eval" else run_train)(model, **batch)
    grads = {name: p.grad for name, p in model.named_parameters()} if mode == "train" else {}
    return Result(leaves(out), grads)


def run_eager(zoo: ZooModel, mode: str, device: str = "cpu", dtype: torch.dtype | None = None) -> Result:
    """The call as it runs without a compiler; ``dtype=torch.float64``: the referee for
    gradients that eager float32 itself gets only roughly (batch norm over 1x1 maps)."""
    return _call(zoo, mode, None, device, dtype)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


Wrap = Callable[[Callable], Callable]


def run_ember(zoo: ZooModel, mode: str, backend: Any = None, device: str = "cpu") -> Result:
    """The call compiled by ember; ``aot_eager`` for training (gradients through ember_aot),
    ``eager`` otherwise, unless ``backend`` says."""
    return observe_ember(lambda wrap: _call(zoo, mode, wrap, device),
                         backend or ("aot_eager" if mode == "train" else "eager"))


def observe_ember(call: Callable[[Wrap], Result], backend: Any) -> Result:
    """``call(wrap)`` with ``wrap`` compiling by ember with ``backend``, and what ember captured:
    graphs, breaks and eager fallbacks (ember's "runs eagerly" warnings count as fallbacks)."""
    events: list[tuple[str, dict]] = []
    observe = lambda event, details: events.append((event, details))  # noqa: E731
    ember.reset()
    ember.compiled.OBSERVERS.append(observe)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = call(lambda fn: ember.compile(fn, backend=backend))
    finally:
        ember.compiled.OBSERVERS.remove(observe)
        ember.reset()
    warned = [str(w.message) for w in caught if str(w.message).startswith("ember:")]
    reasons = [d["reason"] for e, d in events if e in ("break", "fallback")] + warned
    result.capture = Capture(
        graphs=sum(e == "graph" for e, _ in events),
        breaks=sum(e == "break" for e, _ in events),
        fallback=any(e == "fallback" for e, _ in events) or bool(warned),
        first_reason=_first_line(reasons[0]) if reasons else "",
    )
    return result


def run_torch_compile(zoo: ZooModel, mode: str) -> Capture:
    """torch.compile's graphs and graph breaks on the same call, with a counting backend."""
    return count_torch_compile(lambda wrap: _call(zoo, mode, wrap))


def count_torch_compile(call: Callable[[Wrap], Any]) -> Capture:
    """torch.compile's graphs and graph breaks on ``call(wrap)``, ``wrap`` compiling with a
    counting backend."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    graphs: list[torch.fx.GraphModule] = []

    def counting_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    counters.clear()
    try:
        call(lambda fn: torch.compile(fn, backend=counting_backend))
        breaks = sum(counters["graph_break"].values())
    finally:
        torch._dynamo.reset()
    return Capture(graphs=len(graphs), breaks=breaks)


def graph_op_share(zoo: ZooModel, mode: str) -> float | None:
    """``ember.explain``'s share of the call's tensor ops that ran in graphs (eval and train)."""
    if mode == "generate":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ember.explain(run_eval if mode == "eval" else run_train)(build(zoo, mode), **inputs(zoo, mode))
    ember.reset()
    return out.graph_op_share


def shortfall(ours: Capture, theirs: Capture) -> str:
    """Why ember's capture falls short of torch.compile's, or "" when it does not."""
    if ours.fallback:
        return f"eager fallback: {ours.first_reason}"
    if ours.graphs > theirs.graphs or ours.breaks > theirs.breaks:
        first = f"; first break: {ours.first_reason}" if ours.first_reason else ""
        return (f"{ours.graphs} graphs / {ours.breaks} breaks vs torch.compile's {theirs.graphs} / "
                f"{theirs.breaks}{first}")
    return ""


def assert_same(got: Result, expected: Result, mode: str, exact: Callable[[], Result] | None = None) -> None:
    """Outputs (tokens for generate) and gradients, None grads included, equal to eager's.

    The absolute tolerance scales with the tensor's largest value: BatchNorm over a batch of two
    1x1 feature maps (the tiny vision configs) gives gradients in the hundreds, whose float32
    rounding differs by 1e-4 relative between eager and aot_eager's decomposed kernels. Where an
    output or a gradient still differs, ``exact()`` (the call in float64) decides: ours may be no
    farther from it than 4x eager float32's distance (cuDNN picks its algorithms per run on the GPU)."""
    assert len(got.outputs) == len(expected.outputs), (len(got.outputs), len(expected.outputs))
    rtol, atol = (1e-3, 1e-4) if mode == "train" else (1e-4, 1e-5)

    def close(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
        scale = max(1.0, b.abs().max().item()) if b.is_floating_point() and b.numel() else 1.0
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol * scale, msg=lambda m: f"{what}: {m}")

    def close_or_nearer(a: torch.Tensor, b: torch.Tensor, referee: Callable[[], torch.Tensor], what: str) -> None:
        try:
            close(a, b, what)
        except AssertionError:
            if exact is None or not b.is_floating_point():
                raise
            exact_value = referee()
            ours, eager = ((v.double() - exact_value).abs().max().item() for v in (a, b))
            assert ours <= 4 * eager + atol * max(1.0, b.abs().max().item()), \
                f"{what}: {ours:.3g} from float64, eager float32 {eager:.3g}"

    for i, (a, b) in enumerate(zip(got.outputs, expected.outputs)):
        close_or_nearer(a, b, lambda i=i: exact().outputs[i], f"output {i}")
    assert got.grads.keys() == expected.grads.keys()
    for name, grad in expected.grads.items():
        assert (got.grads[name] is None) == (grad is None), f"{name}: grad None-ness differs"
        if grad is not None:
            close_or_nearer(got.grads[name], grad, lambda name=name: exact().grads[name], f"grad of {name}")
