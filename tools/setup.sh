#!/usr/bin/env bash
# Installs every Debian package edgc needs, then configures and builds it.
#
#   tools/setup.sh [--test] [--deps-only] [--build-dir DIR] [--build-type TYPE]
#
#   --test   after building, run the whole test suite (CTest); the exit code is the suite's
#
# Idempotent: packages already present are not reinstalled and `apt-get update` runs at most once per call
# (and only when something is missing). Works as root on a brand-new Debian 12 machine; uses sudo otherwise.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$repo/build"
build_type=Release
deps_only=0
run_tests=0
while [ $# -gt 0 ]; do
  case "$1" in
    --deps-only) deps_only=1 ;;
    --test) run_tests=1 ;;
    --build-dir) build_dir=$2; shift ;;
    --build-type) build_type=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# Build tools (clang-format: the test suite checks the tree against .clang-format) and the fixed C++ dependencies; Open MPI for CPU live runs and distributed sweeps;
# Debian's PyTorch (with a threaded OpenBLAS, else its matrix products fall back to reference BLAS) and
# numpy for trace capture and the cross-language tests; headless Chromium to check `edgc report` pages in a real
# browser (tools/check_report.py).
packages=(
  build-essential cmake ninja-build pkg-config git clang-format
  libeigen3-dev libboost-program-options-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libsimgrid-dev
  libopenmpi-dev openmpi-bin
  python3 python3-numpy python3-torch libopenblas0-pthread
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
  cmake -S "$repo" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type"
fi
cmake --build "$build_dir" --parallel "$(nproc)"

if [ "$run_tests" -eq 1 ]; then
  ctest --test-dir "$build_dir" --output-on-failure --parallel "$(nproc)"
fi
