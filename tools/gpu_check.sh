#!/usr/bin/env bash
# The checks of the CUDA path on a machine with a GPU, from a build that has it (CMake found nvcc): the GPU kernel
# tests, the same tests under compute-sanitizer (memcheck, racecheck, synccheck), the NCCL tests on one rank, the
# PowerSGD / entropy kernel benchmark with its orthogonalisation and stage-entropy tables, and, where BUILD has
# edgc_torch built with -DEDGC_TORCH_CUDA=ON for this machine's python3 and its torch sees the GPU, the CUDA hook's
# test against the CPU hook and (given a corpus) GPT-2-small-sized convergence runs under every policy with the hook
# on the GPU (tools/capture/converge.py --device cuda). Each step's log, the benchmark's profile and the convergence
# record go to OUT; the script goes on after a failed step and exits 1 if any failed.
#
#   tools/gpu_check.sh [BUILD=build] [OUT=gpu-check]
#
# Environment: EDGC_GPU_CHECK_SKIP (space-separated steps to leave out: tests sanitize nccl bench torch converge),
# EDGC_GPU_BENCH_ARGS (extra arguments of edgc_bench_powersgd_cuda, e.g. "--ranks 4,16 --repeats 5"),
# EDGC_GPU_STEP_LIMIT (seconds each step may take before it is stopped and counted failed; default 900),
# EDGC_GPU_CONVERGE_CORPUS (a directory of text files, e.g. from tools/capture/debian_doc_corpus.sh; without it the
# convergence step is skipped), EDGC_GPU_CONVERGE_ARGS (arguments of converge.py replacing the GPT-2-small defaults
# below). compute-sanitizer runs the tests' parity cases only (their filter below); the whole suite under racecheck
# takes tens of minutes.
set -u
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
build=${1:-build}
out=${2:-gpu-check}
tests=$build/tests/kernels/gpu/edgc_gpu_kernel_tests
nccl=$build/tests/kernels/nccl/edgc_nccl_kernel_tests
bench=$build/tools/edgc_bench_powersgd_cuda
for f in "$tests" "$bench"; do
  if [[ ! -x $f ]]; then
    echo "gpu_check: $f not found: configure $build with CUDA (nvcc on PATH) and build it" >&2
    exit 2
  fi
done
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: nvidia-smi finds no GPU on this machine" >&2
  exit 2
fi
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv >"$out/gpu.csv" 2>&1

failed=()
skip=" ${EDGC_GPU_CHECK_SKIP:-} "
limit=${EDGC_GPU_STEP_LIMIT:-900}
step() {  # step NAME COMMAND...: runs unless skipped, within the step limit, logs to OUT/NAME.log, records a failure
  local name=$1
  shift
  if [[ $skip == *" $name "* ]]; then
    echo "== $name: skipped"
    return
  fi
  echo "== $name: $*"
  local start=$SECONDS
  if timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1; then
    echo "   passed in $((SECONDS - start)) s"
  else
    echo "   FAILED (status $?) in $((SECONDS - start)) s; last lines of $out/$name.log:"
    tail -n 15 "$out/$name.log" | sed 's/^/   | /'
    failed+=("$name")
  fi
}

sanitize() {  # every tool over the parity tests; compute-sanitizer's own exit status reports its findings
  local tool status=0
  for tool in memcheck racecheck synccheck; do
    echo "-- $tool"
    compute-sanitizer --tool "$tool" --error-exitcode 3 "$tests" --gtest_filter='CudaParity.*' --gtest_brief=1 ||
      status=1
  done
  return $status
}

step tests "$tests" --gtest_brief=1
if command -v compute-sanitizer >/dev/null || [[ $skip == *" sanitize "* ]]; then
  step sanitize sanitize
else
  echo "== sanitize: compute-sanitizer not on PATH" && failed+=(sanitize)
fi
[[ -x $nccl ]] && step nccl "$nccl" --gtest_filter=-NcclNoDevice.* --gtest_brief=1
# shellcheck disable=SC2086  # the extra arguments are meant to split
step bench "$bench" --out "$out/kernel_profile.json" ${EDGC_GPU_BENCH_ARGS:-}

# edgc_torch on the GPU: only where BUILD's module was built with CUDA for this python3 and torch sees a GPU.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
torch_probe="import torch, edgc_torch._core as c; assert torch.cuda.is_available(), 'torch sees no GPU'; \
c.check_settings(policy='none', backend='cuda')"
if why=$(PYTHONPATH=$build/python python3 -c "$torch_probe" 2>&1); then
  export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
  step torch python3 "$repo/tests/python/test_torch_hook_cuda.py"
  if [[ -n ${EDGC_GPU_CONVERGE_CORPUS:-} ]]; then
    # GPT-2 small's width and depth on bytes (vocabulary 256), the EDGC paper's rank bounds and step for its 12.1B
    # H100 run (r_min 32, r_max 128, step 8, α 0.1, β 0.25) with a window of 25 iterations for a 300-step run.
    converge_args=(--layers 12 --d-model 768 --heads 12 --seq-len 256 --batch-size 16 --lr 6e-4 --warmup 30
      --steps 300 --window 25 --alpha 0.1 --beta 0.25 --r-min 32 --r-max 128 --step 8)
    # shellcheck disable=SC2206  # the replacement arguments are meant to split
    [[ -n ${EDGC_GPU_CONVERGE_ARGS:-} ]] && converge_args=($EDGC_GPU_CONVERGE_ARGS)
    step converge python3 "$repo/tools/capture/converge.py" --device cuda --corpus "$EDGC_GPU_CONVERGE_CORPUS" \
      --out "$out/converge-cuda.json" "${converge_args[@]}"
  else
    echo "== converge: skipped (set EDGC_GPU_CONVERGE_CORPUS to a directory of text files)"
  fi
else
  echo "== torch, converge: skipped ($(tail -n 1 <<<"$why"))"
fi

if ((${#failed[@]})); then
  echo "gpu_check: failed: ${failed[*]} (logs in $out)"
  exit 1
fi
echo "gpu_check: all passed (logs and kernel_profile.json in $out)"
