#!/usr/bin/env bash
# Fails (exit 1) when a C++/CUDA source of the tree differs from what the checked-in .clang-format makes of it,
# listing each file and the first differences; `tools/check_format.sh --fix` rewrites them in place instead.
# Files: those git tracks plus untracked ones it does not ignore; outside a git checkout, every source below the
# top folders. Uses Debian's clang-format (installed by tools/setup.sh); other versions may format differently.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
fix=0
[ "${1:-}" = "--fix" ] && fix=1
cf=${CLANG_FORMAT:-$(command -v clang-format || true)}
if [ -z "$cf" ]; then
  echo "check_format: clang-format not found (tools/setup.sh installs it)" >&2
  exit 2
fi
patterns=('*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h')
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- "${patterns[@]}")
else
  mapfile -t files < <(find core kernels traces sim tools tests \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \
                        -o -name '*.cuh' -o -name '*.h' \) -type f | sort)
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
if [ "$fix" -eq 1 ]; then
  "$cf" -i "${existing[@]}"
  exit 0
fi
bad=0
for f in "${existing[@]}"; do
  if ! diff_out=$("$cf" "$f" | diff -u "$f" - 2>&1); then
    echo "format: $f differs from .clang-format (run tools/check_format.sh --fix)"
    echo "$diff_out" | head -20
    bad=$((bad + 1))
  fi
done
echo "check_format: ${#existing[@]} files, $bad to reformat ($("$cf" --version))"
[ "$bad" -eq 0 ]
