"""Two processes over gloo on the CPU, small models, and what ember made of a call.

:func:`run_ranks` spawns ``world`` processes (``torch.multiprocessing``, a free local port), runs
``scenario(rank, world)`` in each and returns rank 0's result (a scenario asserts on every rank:
a failing rank fails the test with its traceback). :class:`Counter` counts ember's graphs, graph
breaks and eager fallbacks, and the pieces a backend compiled (a graph split at DDP's buckets
makes several); :func:`torch_compile_breaks` counts torch.compile's on the same call.
"""
from __future__ import annotations

import os
import socket
import tempfile
import warnings
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import ember
import ember.compiled


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank: int, world: int, port: int, scenario: Callable, out: str, backend: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    if backend == "nccl":
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, rank=rank, world_size=world)
    try:
        result = scenario(rank, world)
        if rank == 0:
            torch.save(result, out)
    finally:
        dist.destroy_process_group()


def run_ranks(scenario: Callable[[int, int], Any], world: int = 2, backend: str = "gloo") -> Any:
    """Rank 0's result of ``scenario(rank, world)`` run in ``world`` fresh processes."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.pt")
        mp.spawn(_entry, args=(world, free_port(), scenario, out, backend), nprocs=world, join=True)
        return torch.load(out, weights_only=False)


class Counter:
    """ember's graphs, breaks and fallbacks while it is entered, and the graph pieces given to
    the backend (``self.backend``: aot_eager, counted)."""

    def __init__(self, backend: str = "aot_eager") -> None:
        self.events: list[tuple[str, dict]] = []
        self.pieces = 0
        _, compiler, _ = ember.backends.REGISTRY.lookup(backend)

        def counting(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
            self.pieces += 1
            return compiler(gm, example_inputs)

        self.backend = counting

    def __enter__(self) -> "Counter":
        self._catch = warnings.catch_warnings(record=True)
        self.warnings = self._catch.__enter__()
        warnings.simplefilter("always")
        ember.compiled.OBSERVERS.append(self._observe)
        return self

    def __exit__(self, *exc: Any) -> None:
        ember.compiled.OBSERVERS.remove(self._observe)
        self._catch.__exit__(*exc)

    def _observe(self, event: str, details: dict) -> None:
        self.events.append((event, details))

    def count(self, event: str) -> int:
        return sum(e == event for e, _ in self.events)

    def summary(self) -> dict:
        fallbacks = [d["reason"] for e, d in self.events if e == "fallback"]
        fallbacks += [str(w.message) for w in self.warnings if "runs eagerly" in str(w.message)]
        return dict(graphs=self.count("graph"), breaks=self.count("break"), pieces=self.pieces,
                    fallbacks=fallbacks,
                    reasons=sorted({d["reason"].splitlines()[0] for e, d in self.events if e == "break"}))


def torch_compile_breaks(fn: Callable, *args: Any) -> dict:
    """torch.compile's graphs and graph breaks on ``fn(*args)`` (a counting backend)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    graphs = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    counters.clear()
    try:
        torch.compile(fn, backend=counting)(*args)
        return dict(graphs=len(graphs), breaks=sum(counters["graph_break"].values()))
    finally:
        torch._dynamo.reset()


# -- models ------------------------------------------------------------------------------------
class Block(nn.Module):
    """A pre-norm GPT block: causal self-attention and an MLP."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, n, d = h.shape
        q, k, v = self.qkv(self.ln1(h)).view(b, n, 3, self.heads, d // self.heads).unbind(2)
        att = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                         is_causal=True)
        h = h + self.proj(att.transpose(1, 2).reshape(b, n, d))
        return h + self.mlp(self.ln2(h))


class TinyGPT(nn.Module):
    """A decoder-only language model; with labels, returns the next-token loss."""

    def __init__(self, vocab: int = 64, dim: int = 32, layers: int = 2, heads: int = 2, seq: int = 16) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        n = input_ids.shape[1]
        h = self.tok(input_ids) + self.pos(torch.arange(n, device=input_ids.device))
        for block in self.blocks:
            h = block(h)
        logits = self.head(self.norm(h))
        if labels is None:
            return logits
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.classifier(self.features(x).flatten(1))
        return nn.functional.cross_entropy(logits, labels)


def gpt_batch(rank: int, step: int, batch: int = 4, seq: int = 16, vocab: int = 64, device: str = "cpu") -> dict:
    """Tokenizer-style inputs, different on every rank and step."""
    g = torch.Generator().manual_seed(1000 * rank + step)
    ids = torch.randint(0, vocab, (batch, seq), generator=g)
    return dict(input_ids=ids.to(device), labels=torch.roll(ids, -1, 1).to(device))


def cnn_batch(rank: int, step: int, batch: int = 4, device: str = "cpu") -> dict:
    g = torch.Generator().manual_seed(1000 * rank + step)
    return dict(x=torch.randn(batch, 3, 8, 8, generator=g).to(device),
                labels=torch.randint(0, 10, (batch,), generator=g).to(device))


def assert_close(got: torch.Tensor | None, expected: torch.Tensor | None, what: str) -> None:
    assert (got is None) == (expected is None), f"{what}: None-ness differs"
    if expected is not None:
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what}: {m}")
