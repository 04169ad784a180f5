#!/usr/bin/env bash
# Fails (exit 1) when a source file of the libraries or tools (core kernels traces sim tools; tests are exempt) is
# longer than the style guide's cap of 800 lines, listing each. Functions over 100 lines are caught by clang-tidy's
# readability-function-size (.clang-tidy, tools/run_clang_tidy.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
cap=800
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- core kernels traces sim tools |
                       grep -E '\.(cpp|hpp|cu|cuh|h)$')
else
  mapfile -t files < <(find core kernels traces sim tools -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \
                        -o -name '*.cuh' -o -name '*.h' \) | sort)
fi
bad=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  n=$(wc -l <"$f")
  if [ "$n" -gt "$cap" ]; then
    echo "size: $f has $n lines (cap $cap: split it into files a maintainer can name)"
    bad=$((bad + 1))
  fi
done
echo "check_sizes: ${#files[@]} files, $bad over $cap lines"
[ "$bad" -eq 0 ]
