"""Benchmark backend "onnxrt" on CPU: ResNet-18 (batch 4, 3x64x64) and BERT (tiny config).

Times eager PyTorch, ``ember.compile(backend="onnxrt")``, the onnxrt backend called directly
on a graph of the model (parameters lifted to inputs, as ember's capture hands it over; this
row does not depend on the core capturing the model) and ``torch.compile()`` (default inductor)
side by side in one process, under ``torch.no_grad()``, and prints medians. A "*" marks an
ember.compile row where the core did not hand any graph to onnxrt (it ran eagerly).

    python benchmarks/onnxrt_cpu.py [--repeat 50]
"""
from __future__ import annotations

import argparse
import datetime
import logging
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "onnxrt"))
import ember  # noqa: E402
from ember_onnxrt.backend import onnxrt  # noqa: E402
from onnxrt_helpers import leaf_graph  # noqa: E402
from onnxrt_models import ResNet18  # noqa: E402


class _Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.compiled = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.compiled += "onnxruntime partition" in record.getMessage()


def direct(model: torch.nn.Module, args: tuple) -> Callable[..., object]:
    """The onnxrt backend on a graph calling ``model`` with its weights as graph inputs."""
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    weights = [t for _, t in model.named_parameters()] + [t for _, t in model.named_buffers()]

    def call(*tensors: torch.Tensor) -> object:
        state = dict(zip(names, tensors[len(args):]))
        return torch.func.functional_call(model, state, tensors[: len(args)])

    compiled = onnxrt(leaf_graph(call, len(args) + len(weights)), [*args, *weights])
    return lambda *a: compiled(*a, *weights)


def median_ms(fn: Callable[[], object], repeat: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def resnet() -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(0)
    return ResNet18().eval(), (torch.randn(4, 3, 64, 64),)


def bert() -> tuple[torch.nn.Module, tuple]:
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=512, max_position_embeddings=128,
    )
    model = transformers.BertModel(config).eval()
    return model, (torch.randint(0, 1000, (4, 64)),)


def bench(name: str, model: torch.nn.Module, args: tuple, repeat: int) -> None:
    counter = _Counter()
    log = logging.getLogger("ember.onnxrt")
    log.addHandler(counter)
    log.setLevel(logging.INFO)
    candidates = {
        "eager": model,
        "ember onnxrt": ember.compile(model, backend="onnxrt"),
        "onnxrt direct": None,
        "ember inductor": ember.compile(model, backend="inductor"),
        "torch.compile": torch.compile(model),
    }
    results = {}
    with torch.no_grad():
        ref = model(*args)
        for label, fn in candidates.items():
            if label == "onnxrt direct":
                fn = direct(model, args)
            t0 = time.perf_counter()
            out = fn(*args)
            first = time.perf_counter() - t0
            got = out if isinstance(out, torch.Tensor) else out[0]
            want = ref if isinstance(ref, torch.Tensor) else ref[0]
            err = (got - want).abs().max().item()
            if label == "ember onnxrt" and not counter.compiled:
                label += "*"
            results[label] = (median_ms(lambda: fn(*args), repeat), first, err)
    log.removeHandler(counter)
    base = results["eager"][0]
    print(f"\n{name}")
    print(f"  {'':15} {'median ms':>10} {'vs eager':>9} {'1st call s':>11} {'max abs err':>12}")
    for label, (ms, first, err) in results.items():
        print(f"  {label:15} {ms:10.3f} {base / ms:8.2f}x {first:11.2f} {err:12.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    import onnxruntime

    print(f"{datetime.date.today()}  {platform.processor() or platform.machine()}  "
          f"threads={torch.get_num_threads()}  torch {torch.__version__}  "
          f"onnxruntime {onnxruntime.__version__}  python {platform.python_version()}")
    bench("ResNet-18, batch 4, 3x64x64", *resnet(), args.repeat)
    bench("BERT (2 layers, hidden 128), batch 4, seq 64", *bert(), args.repeat)


if __name__ == "__main__":
    main()
