#!/usr/bin/env bash
# The multi-GPU run (issue 28): DDP and FSDP2 training steps of the suite's GPT and ResNet-18 under
# torchrun, eager / torch.compile / ember (default and reduce-overhead), on 2 GPUs and on 1 (the
# scaling), each table appended to $OUT/multigpu.md as soon as it is made, most wanted first, so a
# run cut short by its time limit still returns what it finished. ember's and torch.compile's
# reduce-overhead run in separate processes (README: known gaps), each beside its own eager run.
#
#   bash benchmarks/multi_gpu.sh                 # on the GPU machine, after gpu_session.sh's install
#   DEVICE=cpu NPROC=2 STEPS=2 bash benchmarks/multi_gpu.sh   # the same runs over gloo, to try it here
#   ONLY='resnet18' bash benchmarks/multi_gpu.sh  # the runs whose "GPUs model wrapper" label matches
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/ember_out}"
DEVICE="${DEVICE:-cuda}"
NPROC="${NPROC:-2}"
STEPS="${STEPS:-10}"
mkdir -p "$OUT"
ro() { [ "$DEVICE" = cuda ] && echo ",$1-ro"; }

run() {  # nproc model wrapper compilers [extra args...]
  local n=$1 model=$2 wrapper=$3 compilers=$4
  shift 4
  [[ "$n $model $wrapper" =~ ${ONLY:-.} ]] || return 0
  echo "== $n x $model $wrapper: $compilers" | tee -a "$OUT/multigpu.log"
  OUT="$OUT/tables" torchrun --standalone --nproc_per_node "$n" -m benchmarks.distributed --device "$DEVICE" \
    --model "$model" --wrapper "$wrapper" --compilers "$compilers" --steps "$STEPS" "$@" 2>&1 \
    | grep -v "^\[rank[0-9]*\]:W\|^W1" >>"$OUT/multigpu.log"
  for f in "$OUT"/tables/*.md; do
    [ -e "$f" ] || continue
    { echo "### $n x $model $wrapper ($compilers)"; echo; cat "$f"; echo; } >>"$OUT/multigpu.md"
    rm "$f"
  done
}

mkdir -p "$OUT/tables"
run "$NPROC" gpt ddp "eager,ember$(ro ember)" --trace "$OUT/tables/trace"
run "$NPROC" gpt ddp "eager,torch$(ro torch)"
run "$NPROC" gpt fsdp2 "eager,ember,torch"
run 1 gpt ddp "eager,ember,torch"
run "$NPROC" resnet18 ddp "eager,ember$(ro ember)" --batch 16 --no-tf32
run "$NPROC" resnet18 ddp "eager,torch$(ro torch)" --batch 16 --no-tf32
run "$NPROC" resnet18 fsdp2 "eager,ember,torch" --batch 16 --no-tf32
run 1 resnet18 ddp "eager,ember,torch" --batch 16 --no-tf32
rm -rf "$OUT/tables"
