#!/usr/bin/env bash
# Runs clang-tidy (the checked-in .clang-tidy) over the project's own C++ sources with BUILD_DIR's
# compile_commands.json and fails (exit 1) on any finding, listing them; exit 2 on bad usage.
#
#   tools/run_clang_tidy.sh BUILD_DIR [FILE...]
#
# BUILD_DIR should be a Clang build (tools/setup.sh --test passes its sanitizer build): a GCC build's commands
# carry GCC-only flags (-fno-gnu-unique) that Clang's driver rejects. Files: the .cpp files under core kernels
# traces sim tools that BUILD_DIR compiles (benchmarks and tests are not checked; CUDA sources are not either),
# or the FILEs given. Runs one clang-tidy per core.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 1 ] || [ ! -f "$1/compile_commands.json" ]; then
  echo "run_clang_tidy: usage: tools/run_clang_tidy.sh BUILD_DIR [FILE...] (BUILD_DIR with compile_commands.json)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
tidy=${CLANG_TIDY:-$(command -v clang-tidy || true)}
if [ -z "$tidy" ]; then
  echo "run_clang_tidy: clang-tidy not found (tools/setup.sh installs it)" >&2
  exit 2
fi
cd "$repo"
if [ $# -gt 0 ]; then
  files=("$@")
else
  # The sources the build compiles, as paths relative to the repository.
  mapfile -t files < <(python3 - "$build/compile_commands.json" "$repo" <<'PY'
import json, os, sys
repo = sys.argv[2]
seen = set()
for entry in json.load(open(sys.argv[1])):
    path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), repo)
    top = path.split(os.sep)[0]
    if top in ("core", "kernels", "traces", "sim", "tools") and path.endswith(".cpp") and \
            not path.startswith(os.path.join("tools", "bench")):
        seen.add(path)
print("\n".join(sorted(seen)))
PY
)
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet >"$log" 2>&1 || status=$?
findings=$(grep -cE '(warning|error): ' "$log" || true)
if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
  grep -E -A3 '(warning|error): ' "$log" | head -200
  echo "run_clang_tidy: ${#files[@]} files, $findings findings ($("$tidy" --version | grep -m1 version))" >&2
  exit 1
fi
echo "run_clang_tidy: ${#files[@]} files, no findings ($("$tidy" --version | grep -m1 version))"
