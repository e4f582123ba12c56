"""Distributed training steps: eager, torch.compile and ember on DDP or FSDP2, side by side.

    python -m benchmarks.distributed [--device cpu|cuda] [--wrapper ddp|fsdp2] [--model gpt|resnet18]
    torchrun --nproc_per_node 2 -m benchmarks.distributed --device cuda --wrapper fsdp2

Without torchrun, the script starts its own processes: 2 over gloo on the CPU, 1 over NCCL on
CUDA (``--nproc`` changes it); under torchrun (``RANK`` and ``WORLD_SIZE`` set) each process is
one rank, NCCL on CUDA, with ``NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
NVSHMEM_DISABLE_NVLS=1`` set by the script. A small GPT (``benchmarks.models.GPT``, next-token
cross entropy) or the suite's ResNet-18 (``--model resnet18``, batch norm in train mode, 10
classes) wrapped in DDP (``bucket_cap_mb``) or FSDP2 (``fully_shard`` per block and on the
root) trains with SGD, the batch ``--batch`` per rank,
for each of ``--compilers`` (``eager``, ``torch``, ``torch-ro``, ``ember``, ``ember-ro``: "-ro" is
``mode="reduce-overhead"``, CUDA only) on a fresh model from the same seed, the wrapped model
compiled as users do (``compile(ddp_model)``). Each step (forward, loss, backward, optimizer
step) is timed on rank 0 between barriers; the table gives the median of ``--steps`` steps after
``--warmup`` and the first step (compilation included). After ``--check-steps`` steps the
parameters (each rank's shard) must equal eager's: "params" says so, with the largest
difference. ``--trace`` profiles one ember DDP step on rank 0 with torch.profiler and counts the
all-reduces that start before the backward's last compiled piece ends (overlap). A markdown
table goes to stdout and, when set, to ``$OUT/distributed.md``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any, Callable

for _key, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                     ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_key, _value)
from ember import native_guards  # noqa: E402

# the C++ guard helper is built once per machine (main() builds it before any rank times a step:
# built in the background, its compiler took a core from the ranks' first steps), not per fresh cache
os.environ.setdefault("EMBER_NATIVE_DIR", native_guards.native_dir())
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember_bench_distributed_"))

import torch  # noqa: E402
import torch._dynamo  # noqa: E402  (reset between compilers)
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import ember  # noqa: E402
from benchmarks.models import GPT, ResNet18  # noqa: E402
from benchmarks.timing import command_line, environment  # noqa: E402

COMPILERS = ("eager", "torch", "torch-ro", "ember", "ember-ro")


def _wrap(model: torch.nn.Module, args: argparse.Namespace) -> torch.nn.Module:
    if args.wrapper == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model, bucket_cap_mb=args.bucket_cap_mb)
    from torch.distributed.fsdp import fully_shard
    for block in (model.blocks if args.model == "gpt" else model.layers):
        fully_shard(block)
    return fully_shard(model)


def _compile(model: torch.nn.Module, name: str) -> Callable:
    mode = "reduce-overhead" if name.endswith("-ro") else None
    if name == "eager":
        return model
    if name.startswith("torch"):
        return torch.compile(model, mode=mode)
    return ember.compile(model, mode=mode)


def _model(args: argparse.Namespace, device: str) -> torch.nn.Module:
    if args.model == "gpt":
        return GPT(vocab=args.vocab, d=args.dim, heads=args.heads, layers=args.layers, max_seq=args.seq).to(device)
    return ResNet18(num_classes=10).to(device, _image_dtype(args))


def _image_dtype(args: argparse.Namespace) -> torch.dtype:
    return torch.float64 if args.float64 else torch.float32


def _batch(rank: int, step: int, args: argparse.Namespace, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One rank's inputs and labels of a step (different on each rank, the same for every compiler)."""
    g = torch.Generator().manual_seed(1000 * rank + step)
    if args.model == "resnet18":
        images = torch.randn(args.batch, 3, args.image, args.image, generator=g)
        return images.to(device, _image_dtype(args)), torch.randint(0, 10, (args.batch,), generator=g).to(device)
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
    return ids.to(device), torch.roll(ids, -1, 1).to(device)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
    dist.barrier()


def _local(t: torch.Tensor) -> torch.Tensor:
    return (t.to_local() if hasattr(t, "to_local") else t).detach().double().cpu().clone()


def _run(name: str, rank: int, args: argparse.Namespace, device: str) -> dict:
    torch.manual_seed(0)
    model = _model(args, device)
    wrapped = _wrap(model, args)
    run = _compile(wrapped, name)
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.01)

    def step(i: int) -> None:
        inputs, labels = _batch(rank, i, args, device)
        loss = F.cross_entropy(run(inputs).flatten(0, -2), labels.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    times, params = [], None
    for i in range(1 + args.warmup + args.steps):
        _sync(device)
        start = time.perf_counter()
        step(i)
        _sync(device)
        times.append(time.perf_counter() - start)
        if i + 1 == args.check_steps:
            params = [_local(p) for p in wrapped.parameters()]
    trace = _trace(step, args, device) if args.trace and name == "ember" and args.wrapper == "ddp" else None
    return dict(first=times[0], median=statistics.median(times[1 + args.warmup:]), params=params, trace=trace)


def count_overlap(events: list) -> tuple[int, int, int]:
    """(backward pieces, all-reduces, all-reduces that start before the last piece's backward
    ends) among a torch.profiler trace's events (``prof.events()``)."""
    events = [e for e in events if e.time_range.start > 0]
    backward = [e for e in events if "Backward" in e.name and "Function" in e.name]
    comms = [e for e in events if "all_reduce" in e.name.lower() or "allreduce" in e.name.lower()]
    if not backward:
        return 0, len(comms), 0
    end = max(e.time_range.end for e in backward)
    return len(backward), len(comms), sum(e.time_range.start < end for e in comms)


def _trace(step: Callable[[int], None], args: argparse.Namespace, device: str) -> str:
    """One profiled step: how many all-reduces start before the backward's last piece ends."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        step(10_000)
        _sync(device)
    pieces, comms, early = count_overlap(prof.events())
    if rank_zero():
        os.makedirs(args.trace, exist_ok=True)
        prof.export_chrome_trace(os.path.join(args.trace, f"ember_{args.wrapper}_{device}.json"))
    return (f"{pieces} backward events of compiled pieces; {early} of {comms} all-reduce events start "
            f"before the last of them ends")


def rank_zero() -> bool:
    return dist.get_rank() == 0


def _worker(rank: int, world: int, args: argparse.Namespace, port: int | None) -> None:
    device = args.device
    if port is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
        if args.no_tf32:
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 2) // world))
    dist.init_process_group("nccl" if device == "cuda" else "gloo")
    try:
        results = {}
        for name in args.compilers.split(","):
            if name.endswith("-ro") and device != "cuda":
                continue
            try:
                results[name] = _run(name, rank, args, device)
            except Exception as e:  # one compiler failing (torch.compile's inductor on FSDP2 ResNet-18) is a row
                results[name] = dict(error=f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
                _sync(device)
            torch._dynamo.reset()
            ember.reset()
        _report(results, args, world)
    finally:
        dist.destroy_process_group()


def _check(r: dict, eager: dict | None, args: argparse.Namespace) -> str:
    """Whether a compiler's parameters equal eager's on every rank (a collective: every rank calls it)."""
    if eager is None or r["params"] is None or eager["params"] is None:
        return "not checked"
    diff = max((a - b).abs().max().item() for a, b in zip(r["params"], eager["params"]))
    same = all(torch.allclose(a, b, rtol=1e-3, atol=1e-4) for a, b in zip(r["params"], eager["params"]))
    flag = torch.tensor([int(same)], device="cuda" if args.device == "cuda" else "cpu")
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)  # every rank's shard
    return f"{'equal' if flag.item() else 'DIFFER'} (max diff {diff:.1e})"


def _report(results: dict, args: argparse.Namespace, world: int) -> None:
    eager = results.get("eager")
    eager = None if eager is None or "error" in eager else eager
    rows = []
    for name, r in results.items():
        if "error" in r:
            rows.append(f"| {name} | - | - | - | failed: {r['error']} |")
            continue
        ratio = f"{eager['median'] / r['median']:.2f}x" if eager else "-"
        rows.append(f"| {name} | {r['first']:.2f} | {r['median'] * 1e3:.1f} | {ratio} | {_check(r, eager, args)} |")
    if not rank_zero():
        return
    lines = [f"{args.wrapper} x {world} ranks ({'nccl' if args.device == 'cuda' else 'gloo'}), {_describe(args)}", "",
             *environment(args.device, command_line("benchmarks.distributed")), "",
             f"| compiler | first step s | median step ms | vs eager | params after {args.check_steps} steps |",
             "|---|---|---|---|---|", *rows]
    lines += [f"\noverlap ({name}): {r['trace']}" for name, r in results.items() if r.get("trace")]
    text = "\n".join(lines)
    print(text, flush=True)
    if os.environ.get("OUT"):
        name = f"distributed_{args.model}_{args.wrapper}_{args.device}_x{world}.md"
        os.makedirs(os.environ["OUT"], exist_ok=True)
        with open(os.path.join(os.environ["OUT"], name), "w") as f:
            f.write(text + "\n")


def _describe(args: argparse.Namespace) -> str:
    if args.model == "gpt":
        return f"GPT d={args.dim} layers={args.layers} vocab={args.vocab}, batch {args.batch}x{args.seq} per rank"
    return (f"ResNet-18{' float64' if args.float64 else ''}, batch {args.batch}x3x{args.image}x{args.image}"
            " per rank")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--wrapper", choices=("ddp", "fsdp2"), default="ddp")
    ap.add_argument("--model", choices=("gpt", "resnet18"), default="gpt")
    ap.add_argument("--compilers", default=None, help="comma-separated, of " + ", ".join(COMPILERS))
    ap.add_argument("--nproc", type=int, default=None, help="processes when not under torchrun")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--check-steps", type=int, default=5)
    ap.add_argument("--bucket-cap-mb", type=float, default=1.0)
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image", type=int, default=64, help="ResNet-18 image size")
    ap.add_argument("--no-tf32", action="store_true",
                    help="turn TF32 off in cuDNN and cuBLAS (compiled layouts pick other TF32 convolutions)")
    ap.add_argument("--float64", action="store_true",
                    help="ResNet-18 in float64: parameters then differ from eager's by rounding alone")
    ap.add_argument("--trace", default=None, help="folder for the profiled ember DDP step's chrome trace")
    args = ap.parse_args(argv)
    cuda = args.device == "cuda"
    args.dim = args.dim or (512 if cuda else 128)
    args.compilers = args.compilers or ",".join(c for c in COMPILERS if cuda or not c.endswith("-ro"))
    native_guards.ensure_built()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun
        _worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args, None)
        return 0
    import socket

    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    world = args.nproc or (1 if cuda else 2)
    mp.spawn(_worker, args=(world, args, port), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
