"""`generate()` of a small decoder with a KV cache: eager, torch.compile and ember side by side.

    python -m benchmarks.generate [--device cpu|cuda] [--tokens 64] [--rounds 3]

A GPT-2 of 4 layers (hidden 256, random weights, no download) generates ``--tokens`` new tokens
greedily from a batch of 2 prompts of 12 tokens with an attention mask, its forward compiled
(``model.forward = compile(model.forward)``, the way users compile a model they call
``generate`` on). Each compiler is timed on a fresh model in the same process: the first
``generate`` (compilation included: "total s") and then ``--rounds`` more, whose median gives
tokens per second. The graph count (from a counting wrapper around each backend) and the tokens
(which must equal eager's) are reported. A markdown table goes to stdout and, when set, to
``$OUT/generate.md``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any, Callable

from ember import native_guards  # noqa: E402

# the C++ guard helper is built once per machine (native_guards), not per fresh cache below
os.environ.setdefault("EMBER_NATIVE_DIR", native_guards.native_dir())
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember_bench_generate_"))

import torch  # noqa: E402

import ember  # noqa: E402


def _model(device: str) -> Any:
    import transformers
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000, n_positions=256)
    return transformers.GPT2LMHeadModel(config).eval().to(device)


def _inputs(device: str) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 1000, (2, 12), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # left padding on the second prompt, as a tokenizer gives it
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _run(name: str, wrap: Callable[[Any], Any] | None, device: str, tokens: int, rounds: int) -> dict:
    model = _model(device)
    counter = {"graphs": 0}
    if wrap is not None:
        model.forward = wrap(model.forward, counter)
    inputs = _inputs(device)

    def generate() -> torch.Tensor:
        with torch.no_grad():
            return model.generate(**inputs, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                                  pad_token_id=0)

    _sync(device)
    start = time.perf_counter()
    out = generate()
    _sync(device)
    total = time.perf_counter() - start
    times = []
    for _ in range(rounds):
        _sync(device)
        start = time.perf_counter()
        generate()
        _sync(device)
        times.append(time.perf_counter() - start)
    return {"name": name, "tokens": out, "total": total, "tok_s": tokens * 2 / statistics.median(times),
            "graphs": counter["graphs"] if wrap is not None else 0}


def _counting(backend: Any) -> Callable:
    def make(counter: dict) -> Callable:
        def count(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
            counter["graphs"] += 1
            return backend(gm, example_inputs)
        return count
    return make


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    native_guards.ensure_built()  # guards check tensors in C++ from the first compile, as an installed ember does

    def torch_compile(forward: Callable, counter: dict) -> Callable:
        from torch._inductor.compile_fx import compile_fx  # the benchmark compares, product code never calls it
        return torch.compile(forward, backend=_counting(compile_fx)(counter))

    def ember_compile(forward: Callable, counter: dict) -> Callable:
        from ember_inductor.backend import inductor
        backend = _counting(inductor)(counter)
        backend.dynamic = True  # the counting wrapper passes symbolic graphs on, as the inductor takes them
        return ember.compile(forward, backend=backend)

    rows = [_run("eager", None, args.device, args.tokens, args.rounds)]
    rows.append(_run("torch.compile", torch_compile, args.device, args.tokens, args.rounds))
    torch._dynamo.reset()
    rows.append(_run("ember", ember_compile, args.device, args.tokens, args.rounds))
    eager = rows[0]
    lines = [f"generate() of {args.tokens} new tokens, batch 2, GPT-2 4x256, {args.device}, torch {torch.__version__}",
             "", "| compiler | graphs | total s (compile included) | tokens/s | x eager | tokens equal eager's |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        same = torch.equal(r["tokens"], eager["tokens"])
        lines.append(f"| {r['name']} | {r['graphs'] or '-'} | {r['total']:.2f} | {r['tok_s']:.0f} | "
                     f"{r['tok_s'] / eager['tok_s']:.2f}x | {'yes' if same else 'NO'} |")
    text = "\n".join(lines)
    print(text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "generate.md"), "w") as f:
            f.write(text + "\n")
    return 0 if all(torch.equal(r["tokens"], eager["tokens"]) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
