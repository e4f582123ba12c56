"""`generate()` of a small decoder with a KV cache: eager, torch.compile and ember side by side.

    python -m benchmarks.generate [--device cpu|cuda] [--tokens 64] [--rounds 9]

A GPT-2 of 4 layers (hidden 256, random weights, no download) generates ``--tokens`` new tokens
greedily from a batch of 2 prompts of 12 tokens with an attention mask, its forward compiled
(``model.forward = compile(model.forward)``, the way users compile a model they call
``generate`` on). Each compiler has a fresh model in the same process; the first ``generate``
of each is timed (compilation included), then ``--rounds`` alternating rounds (eager,
torch.compile, ember, eager, ...; ``benchmarks.timing``) of one synchronized ``generate`` each,
whose median gives tokens per second. The graph count (from a counting wrapper around each backend) and the tokens
(which must equal eager's) are reported. A markdown table goes to stdout and, when set, to
``$OUT/generate.md``.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any, Callable

from ember import native_guards  # noqa: E402

# the C++ guard helper is built once per machine (native_guards), not per fresh cache below
os.environ.setdefault("EMBER_NATIVE_DIR", native_guards.native_dir())
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember_bench_generate_"))

import torch  # noqa: E402

import ember  # noqa: E402
from benchmarks.timing import command_line, environment, measure  # noqa: E402


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


def _setup(wrap: Callable[[Any, dict], Any] | None, device: str, tokens: int) -> tuple[Callable, dict]:
    """A fresh model, its forward compiled by ``wrap`` (counting graphs into the dict), and a
    ``generate()`` of ``tokens`` greedy tokens."""
    model = _model(device)
    counter = {"graphs": 0}
    if wrap is not None:
        model.forward = wrap(model.forward, counter)
    inputs = _inputs(device)

    def generate() -> torch.Tensor:
        with torch.no_grad():
            return model.generate(**inputs, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                                  pad_token_id=0)
    return generate, counter


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
    parser.add_argument("--rounds", type=int, default=9)
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

    compilers = {"eager": None, "torch.compile": torch_compile, "ember": ember_compile}
    setups = [_setup(wrap, args.device, args.tokens) for wrap in compilers.values()]
    runs = [generate for generate, _ in setups]
    timings = measure(runs, args.device, rounds=args.rounds, warmup=1, calls=1)
    tokens = [run() for run in runs]
    same = [torch.equal(out, tokens[0]) for out in tokens]
    eager = timings[0]
    lines = [f"generate() of {args.tokens} new tokens, batch 2, GPT-2 4x256, {args.device}", "",
             *environment(args.device, command_line("benchmarks.generate", argv)),
             f"- method: one process, {args.rounds} alternating rounds (eager, torch.compile, ember, ...), "
             f"one synchronized generate() each; tokens/s from the median; first = the first generate() "
             f"of a fresh model (compilation included)", "",
             "| compiler | graphs | first generate s (compile included) | median generate ms | tokens/s | x eager "
             "| tokens equal eager's |",
             "|---|---|---|---|---|---|---|"]
    for name, (_, counter), timing, equal in zip(compilers, setups, timings, same):
        rate = args.tokens * 2 / (timing.median / 1e3)
        lines.append(f"| {name} | {counter['graphs'] if name != 'eager' else '-'} | {timing.first_s:.2f} | "
                     f"{timing.median:.1f} | {rate:.0f} | {eager.median / timing.median:.2f}x | "
                     f"{'yes' if equal else 'NO'} |")
    text = "\n".join(lines)
    print(text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "generate.md"), "w") as f:
            f.write(text + "\n")
    return 0 if all(same) else 1


if __name__ == "__main__":
    raise SystemExit(main())
