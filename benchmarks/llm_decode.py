"""LLM decode with a static KV cache: eager, torch.compile and ember, tokens/s and roofline share.

    python -m benchmarks.llm_decode [--shapes 1b 7b] [--batches 1 8] [--tokens 200] [--mode reduce-overhead]
    python -m benchmarks.llm_decode --hf [--shapes 1b]      # transformers' generate(cache_implementation="static")

gpt-fast's recipe, with the model of ``benchmarks.llama``: the prompt is prefilled eagerly, then
``decode_one_token`` (forward of one token at ``pos``, top-k sampling on the GPU with the
exponential trick, no host sync) is compiled with ``fullgraph=True`` and called once per token;
``pos`` is a device tensor advanced in place. Each compiler runs in a process of its own (a child of
this one), which also times eager on the same model, so every ratio comes from one process. The
roofline is the time to read every parameter once per token at the copy bandwidth measured in
the same process: share = tokens/s / (bandwidth / parameter bytes); with batch B each step makes
B tokens from one read of the weights. Before timing, the compiled step's greedy logits of the
first token are compared with eager's.

``--hf``: transformers' documented recipe on ``LlamaForCausalLM`` of the same shape:
``model.forward = compile(model.forward, mode=..., fullgraph=True)``, then
``generate(cache_implementation="static", do_sample=False)``; tokens must equal eager's.
A markdown table goes to stdout and, when set, to ``$OUT/llm_decode.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from typing import Any, Callable

import torch

from benchmarks.timing import command_line, environment

PROMPT = 16


def _bandwidth() -> float:
    """Device copy bandwidth, bytes/s (read + write), median of 20 copies of 1 GiB."""
    x = torch.empty(1 << 29, dtype=torch.bfloat16, device="cuda")
    y = torch.empty_like(x)
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        y.copy_(x)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return 2 * x.numel() * x.element_size() / times[len(times) // 2]


def _sample(logits: torch.Tensor, temperature: float = 0.8, top_k: int = 200) -> torch.Tensor:
    logits = logits[:, -1] / temperature
    v, _ = torch.topk(logits, top_k)
    logits = torch.where(logits < v[:, -1:], -float("inf"), logits)
    probs = torch.softmax(logits, dim=-1)
    q = torch.empty_like(probs).exponential_(1)
    return torch.argmax(probs / q, dim=-1, keepdim=True)


def decode_one_token(model: torch.nn.Module, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    return _sample(model(x, pos))


def greedy_logits(model: torch.nn.Module, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    return model(x, pos)[:, -1].float()


def _compiler(name: str, mode: str | None) -> Callable[[Callable], Callable]:
    if name == "eager":
        return lambda f: f
    if name == "torch":
        return lambda f: torch.compile(f, mode=mode, fullgraph=True)
    import ember
    return lambda f: ember.compile(f, mode=mode, fullgraph=True)


def _decode(step: Callable, model: torch.nn.Module, batch: int, tokens: int) -> float:
    """Seconds for ``tokens`` decode steps after a fresh prefill."""
    from benchmarks.llama import Llama
    assert isinstance(model, Llama)
    prompt = torch.randint(0, model.s.vocab, (batch, PROMPT), device="cuda")
    with torch.no_grad():
        x = _sample(model(prompt, torch.arange(PROMPT, device="cuda")))
        pos = torch.tensor([PROMPT], device="cuda")
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(tokens):
            x = step(model, x, pos).clone()
            pos += 1
        torch.cuda.synchronize()
    return time.perf_counter() - t


def run_one(compiler: str, shape: str, batch: int, tokens: int, mode: str | None) -> dict[str, Any]:
    """In a child: eager and ``compiler`` on one model; tokens/s of each, compile seconds, logits check."""
    from benchmarks.llama import build
    model = build(shape, "cuda", torch.bfloat16).eval()
    model.setup_cache(batch, PROMPT + tokens + 8)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    out: dict[str, Any] = {"compiler": compiler, "shape": shape, "batch": batch, "params_gb": params / 1e9}
    bw = _bandwidth()
    out["bandwidth_tbs"] = bw / 1e12
    roofline = bw / params * batch  # tokens/s if each step only read the weights once
    eager_s = _decode(decode_one_token, model, batch, tokens)
    out["eager_tps"] = batch * tokens / eager_s
    if compiler != "eager":
        wrap = _compiler(compiler, mode)
        x = torch.randint(0, model.s.vocab, (batch, 1), device="cuda")
        pos = torch.tensor([PROMPT], device="cuda")
        with torch.no_grad():
            ref = greedy_logits(model, x, pos)
            got = wrap(greedy_logits)(model, x, pos)
        out["logits_max_diff"] = (ref - got).abs().max().item()
        step = wrap(decode_one_token)
        t = time.perf_counter()
        _decode(step, model, batch, 4)  # compiles (and records CUDA graphs)
        out["compile_s"] = time.perf_counter() - t
        out["tps"] = batch * tokens / min(_decode(step, model, batch, tokens) for _ in range(3))
        out["roofline_share"] = out["tps"] / roofline
    out["eager_roofline_share"] = out["eager_tps"] / roofline
    return out


def run_hf(compiler: str, shape: str, tokens: int, mode: str | None) -> dict[str, Any]:
    """In a child: transformers' static-cache recipe, eager and ``compiler``."""
    import transformers

    from benchmarks.llama import SHAPES
    s = SHAPES[shape]
    cfg = transformers.LlamaConfig(vocab_size=s.vocab, hidden_size=s.dim, num_hidden_layers=s.layers,
                                   num_attention_heads=s.heads, num_key_value_heads=s.kv_heads,
                                   intermediate_size=s.ffn, rope_theta=s.rope_base, max_position_embeddings=4096,
                                   tie_word_embeddings=s.tie)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    bw = _bandwidth()
    prompt = torch.randint(3, s.vocab, (1, PROMPT), device="cuda")
    kw = dict(max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False, cache_implementation="static",
              disable_compile=True)  # else generate wraps the call in torch.compile by itself on CUDA

    def timed() -> tuple[torch.Tensor, float]:
        torch.cuda.synchronize()
        t = time.perf_counter()
        ids = model.generate(prompt, **kw)
        torch.cuda.synchronize()
        return ids, time.perf_counter() - t

    ref, eager_s = timed()
    out: dict[str, Any] = {"compiler": compiler, "shape": shape, "batch": 1, "params_gb": params / 1e9,
                           "bandwidth_tbs": bw / 1e12, "eager_tps": tokens / eager_s,
                           "eager_roofline_share": tokens / eager_s / (bw / params)}
    if compiler != "eager":
        model.forward = _compiler(compiler, mode)(model.forward)
        t = time.perf_counter()
        first, _ = timed()
        out["compile_s"] = time.perf_counter() - t
        ids, secs = min((timed() for _ in range(3)), key=lambda r: r[1])
        out["tokens_equal"] = bool(torch.equal(ids, ref) and torch.equal(first, ref))
        out["tps"] = tokens / secs
        out["roofline_share"] = out["tps"] / (bw / params)
    return out


def _child(args: argparse.Namespace) -> int:
    mode = None if args.mode == "default" else args.mode
    try:
        if args.hf:
            res = run_hf(args.child, args.shapes[0], args.tokens, mode)
        else:
            res = run_one(args.child, args.shapes[0], args.batches[0], args.tokens, mode)
    except Exception as exc:
        traceback.print_exc()
        res = {"compiler": args.child, "shape": args.shapes[0], "batch": args.batches[0],
               "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"}
    print("RESULT " + json.dumps(res), flush=True)
    return 0


def _row(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"| {r['shape']} | {r['batch']} | {r['compiler']} | - | - | - | - | fails: {r['error']} |"
    check = ""
    if "logits_max_diff" in r:
        check = f"logits max diff {r['logits_max_diff']:.3g}"
    elif "tokens_equal" in r:
        check = "tokens equal eager's" if r["tokens_equal"] else "tokens DIFFER from eager's"
    tps = r.get("tps")
    ours = (f"{tps:.1f} ({tps / r['eager_tps']:.2f}x, {100 * r['roofline_share']:.0f}% of roofline)"
            if tps else "-")
    comp = f"{r['compile_s']:.0f}" if "compile_s" in r else "-"
    return (f"| {r['shape']} | {r['batch']} | {r['compiler']} | {r['eager_tps']:.1f} "
            f"({100 * r['eager_roofline_share']:.0f}%) | {ours} | {comp} | {r['bandwidth_tbs']:.2f} | {check} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", default=["1b", "7b"])
    ap.add_argument("--batches", nargs="*", type=int, default=[1, 8])
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--mode", choices=["default", "reduce-overhead"], default="reduce-overhead")
    ap.add_argument("--compilers", nargs="*", default=["torch", "ember"])
    ap.add_argument("--hf", action="store_true", help="transformers' generate with a static cache")
    ap.add_argument("--timeout", type=int, default=420, help="seconds per child process")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(args)
    rows = []
    for shape in args.shapes:
        for batch in ([1] if args.hf else args.batches):
            for compiler in args.compilers:
                cmd = [sys.executable, "-m", "benchmarks.llm_decode", "--child", compiler, "--shapes", shape,
                       "--batches", str(batch), "--tokens", str(args.tokens), "--mode", args.mode]
                cmd += ["--hf"] if args.hf else []
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                    res = json.loads(lines[-1][7:]) if lines else {
                        "compiler": compiler, "shape": shape, "batch": batch,
                        "error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"}
                    if "error" in res:
                        sys.stderr.write(proc.stderr[-3000:])
                except subprocess.TimeoutExpired:
                    res = {"compiler": compiler, "shape": shape, "batch": batch, "error": f"over {args.timeout} s"}
                rows.append(res)
                print(_row(res), flush=True)
    what = "transformers generate(cache_implementation='static')" if args.hf else "gpt-fast-style decode_one_token"
    head = [f"# LLM decode, {what}, mode {args.mode}, {args.tokens} tokens, bf16", "",
            *environment("cuda", command_line("benchmarks.llm_decode", argv)),
            "- method: one child process per compiler, eager timed in the same process; tokens/s of the best of 3 "
            "decodes (after a compile run of 4 tokens); roofline = copy bandwidth / parameter bytes x batch.", "",
            "| shape | batch | compiler | eager tokens/s (roofline) | compiled tokens/s (x eager, roofline) "
            "| compile s | copy TB/s | check |", "|---|---|---|---|---|---|---|---|"]
    report = "\n".join(head + [_row(r) for r in rows]) + "\n"
    print(report)
    if os.environ.get("OUT"):
        name = "llm_decode_hf.md" if args.hf else f"llm_decode_{args.mode}.md"
        with open(os.path.join(os.environ["OUT"], name), "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
