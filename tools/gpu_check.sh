#!/usr/bin/env bash
# The checks of the CUDA path on a machine with a GPU, from a build that has it (CMake found nvcc): the GPU kernel
# tests, the same tests under compute-sanitizer (memcheck, racecheck, synccheck), the NCCL tests on one rank, and the
# PowerSGD / entropy kernel benchmark with its stage-entropy table. Each step's log and the benchmark's profile go to
# OUT; the script goes on after a failed step and exits 1 if any failed.
#
#   tools/gpu_check.sh [BUILD=build] [OUT=gpu-check]
#
# Environment: EDGC_GPU_CHECK_SKIP (space-separated steps to leave out: tests sanitize nccl bench),
# EDGC_GPU_BENCH_ARGS (extra arguments of edgc_bench_powersgd_cuda, e.g. "--ranks 4,16 --repeats 5").
# compute-sanitizer runs the tests' parity cases only (their filter below); the whole suite under racecheck takes
# tens of minutes.
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
step() {  # step NAME COMMAND...: runs unless skipped, logs to OUT/NAME.log, records a failure
  local name=$1
  shift
  if [[ $skip == *" $name "* ]]; then
    echo "== $name: skipped"
    return
  fi
  echo "== $name: $*"
  local start=$SECONDS
  if "$@" >"$out/$name.log" 2>&1; then
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
if command -v compute-sanitizer >/dev/null; then
  step sanitize sanitize
else
  echo "== sanitize: compute-sanitizer not on PATH" && failed+=(sanitize)
fi
[[ -x $nccl ]] && step nccl "$nccl" --gtest_filter=-NcclNoDevice.* --gtest_brief=1
# shellcheck disable=SC2086  # the extra arguments are meant to split
step bench "$bench" --out "$out/kernel_profile.json" ${EDGC_GPU_BENCH_ARGS:-}

if ((${#failed[@]})); then
  echo "gpu_check: failed: ${failed[*]} (logs in $out)"
  exit 1
fi
echo "gpu_check: all passed (logs and kernel_profile.json in $out)"
