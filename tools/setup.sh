#!/usr/bin/env bash
# Installs every Debian package edgc needs, then configures and builds it.
#
#   tools/setup.sh [--test [--quick]] [--no-sanitize] [--deps-only] [--build-dir DIR] [--build-type TYPE]
#
#   --test         after building, run the whole test suite (CTest); then build DIR-asan with Clang, ASan +
#                  UBSan and the fuzz targets (-DEDGC_FUZZ=ON), run the whole suite again under it, each fuzz
#                  target for 10 s and clang-tidy over the sources
#                  (tools/run_clang_tidy.sh); fails when any run fails, a sanitizer reported an error or
#                  clang-tidy found anything
#   --no-sanitize  with --test: skip the sanitizer build and its runs
#   --quick        with --test: the fast lane, a few minutes: the unit tests only (CTest label e2e left out: the
#                  binary end to end, live runs, validation suites) and no sanitizer build
#
# Idempotent: packages already present are not reinstalled and `apt-get update` runs at most once per call
# (and only when something is missing). Works as root on a brand-new Debian 12 machine; uses sudo otherwise.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$repo/build"
build_type=Release
deps_only=0
run_tests=0
sanitize=1
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --deps-only) deps_only=1 ;;
    --test) run_tests=1 ;;
    --no-sanitize) sanitize=0 ;;
    --quick) quick=1; sanitize=0 ;;
    --build-dir) build_dir=$2; shift ;;
    --build-type) build_type=$2; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# Build tools (clang-format: the test suite checks the tree against .clang-format; Clang with its sanitizer and
# libFuzzer runtimes for the fuzz targets, tests/fuzz) and the fixed C++ dependencies; Open MPI for CPU live runs and distributed sweeps;
# Debian's PyTorch (with a threaded OpenBLAS, else its matrix products fall back to reference BLAS) and
# numpy for trace capture and the cross-language tests; headless Chromium to check `edgc report` pages in a real
# browser (tools/check_report.py).
packages=(
  build-essential cmake ninja-build pkg-config git clang-format clang-tidy clang libclang-rt-dev
  libeigen3-dev libboost-program-options-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libsimgrid-dev
  libopenmpi-dev openmpi-bin
  python3 python3-dev python3-numpy python3-torch libopenblas0-pthread pybind11-dev
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then missing+=("$p"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

[ "$deps_only" -eq 1 ] && exit 0

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S "$repo" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type" -DEDGC_WERROR=ON
fi
cmake --build "$build_dir" --parallel "$(nproc)"

[ "$run_tests" -eq 1 ] || exit 0
status=0
ctest_args=()
[ "$quick" -eq 1 ] && ctest_args=(--label-exclude e2e)
ctest --test-dir "$build_dir" --output-on-failure --parallel "$(nproc)" "${ctest_args[@]}" || status=$?
[ "$sanitize" -eq 1 ] || exit "$status"

# The same suite under ASan + UBSan (tools/README.md, "Sanitizers"; tests/sanitizer/README.md), in its own build
# directory, built by Clang with libFuzzer's instrumentation (-DEDGC_FUZZ=ON sanitizes every object and adds the
# fuzz targets of tests/fuzz). -O1 and line tables keep the build short and the reports readable; CUDA is left out
# (nvcc's objects are not instrumented and the GPU tests skip without a device). ASan and LSan write to
# DIR-asan/sanitizer-reports/; an error there fails the run even where the process that wrote it exited 0 (files
# holding only SimGrid's stack warning do not). Then every fuzz target runs for a few seconds on its seeds and past
# findings (tests/fuzz/regressions): a regression guard, not a campaign (tests/fuzz/run_fuzzers.sh runs those).
asan_dir="$build_dir-asan"
if [ ! -f "$asan_dir/CMakeCache.txt" ]; then
  cmake -S "$repo" -B "$asan_dir" "${generator[@]}" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DEDGC_FUZZ=ON -DEDGC_ENABLE_CUDA=OFF -DEDGC_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
fi
start=$(date +%s)
cmake --build "$asan_dir" --parallel "$(nproc)"
built=$(date +%s)
rm -rf "$asan_dir/sanitizer-reports"
asan_status=0
ctest --test-dir "$asan_dir" --output-on-failure --parallel "$(nproc)" || asan_status=$?
reports=$(grep -l -E "ERROR: (Address|Leak)Sanitizer|Sanitizer has encountered a fatal error|runtime error:" \
  "$asan_dir"/sanitizer-reports/* 2>/dev/null | sort || true)
if [ -n "$reports" ]; then
  for r in $reports; do echo "==== $r"; cat "$r"; done
  echo "setup: sanitizer reports above ($(echo "$reports" | wc -l) files in $asan_dir/sanitizer-reports)" >&2
  asan_status=1
fi
tested=$(date +%s)
"$repo/tests/fuzz/run_fuzzers.sh" "$asan_dir" --time 10 || asan_status=1
fuzzed=$(date +%s)
# clang-tidy (.clang-tidy) over the project's sources, with the Clang build's compile commands.
"$repo/tools/run_clang_tidy.sh" "$asan_dir" || asan_status=1
echo "setup: sanitizer build $((built - start)) s, sanitizer tests $((tested - built)) s," \
  "fuzz regression runs $((fuzzed - tested)) s, clang-tidy $(($(date +%s) - fuzzed)) s, status $asan_status"
[ "$status" -ne 0 ] || status=$asan_status
exit "$status"
