#!/usr/bin/env bash
# One GPU-machine session (device tool): install ember there, run the `gpu` tests and the GPU
# benchmarks, and leave every log under $OUT. The machine has no network: carry `.whl` holding
# the wheels of `bytecode`, `tabulate` and `expecttest` (torch's OpInfo database imports it; see
# the device tool's README).
#
#   bash benchmarks/gpu_session.sh tests      # pytest -m gpu (inductor on CUDA, cudagraphs)
#   bash benchmarks/gpu_session.sh bench      # benchmarks.run --device cuda (eager / ember / torch.compile)
#   bash benchmarks/gpu_session.sh cudagraphs # benchmarks/cudagraphs_gpu.py (mode="reduce-overhead")
#   bash benchmarks/gpu_session.sh warm       # benchmarks.warm_start --device cuda (cold vs disk-cache start)
#   bash benchmarks/gpu_session.sh profile    # benchmarks.profile_gpu on workloads named by $PROFILE (default: resnet18 train step)
# Several steps may be named in one call; each gets the seconds in $STEP_BUDGET (default 240).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/ember_out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 \
  || { cat "$OUT/install.log"; exit 1; }
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())"
export EMBER_NATIVE_DIR=/tmp/ember-native  # the C++ guard helper, built once for every step
python3 -c "from ember import native_guards; print('C++ tensor check of guards:', native_guards.ensure_built())"
budget="${STEP_BUDGET:-240}"
for step in "$@"; do
  case "$step" in
    tests)
      timeout "$budget" python3 -m pytest -q -m gpu -p no:cacheprovider tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -40 ;;
    bench)
      timeout "$budget" python3 -m benchmarks.run --device cuda --budget "$((budget - 60))" 2>&1 | tee "$OUT/bench_cuda.log" ;;
    cudagraphs)
      timeout "$budget" python3 benchmarks/cudagraphs_gpu.py --budget "$((budget - 30))" 2>&1 | tee "$OUT/cudagraphs.log" ;;
    warm)
      timeout "$budget" python3 -m benchmarks.warm_start --device cuda 2>&1 | tee "$OUT/warm_start.log" ;;
    profile)
      timeout "$budget" python3 -m benchmarks.profile_gpu --only "${PROFILE:-resnet18 train step}" 2>&1 \
        | tee "$OUT/profile.log" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
