#!/usr/bin/env bash
# Runs the libFuzzer targets of a fuzz build one after the other, each on its corpus and dictionary, until it has
# executed --runs inputs or run --time seconds, whichever comes first (tools/README.md, "Fuzzing").
#
#   tests/fuzz/run_fuzzers.sh BUILD_DIR [--runs N] [--time S] [--timeout S] [TARGET...]
#
#   BUILD_DIR  configured with -DEDGC_FUZZ=ON and Clang, targets built (cmake --build BUILD_DIR --target edgc_fuzz)
#   --runs N   executions per target (default 1000000)
#   --time S   seconds per target at most (default 1200)
#   --timeout S  seconds one input may take before it counts as a finding (default 10; a long run beside other
#              work needs more: load, not the input, can make one execution slow)
#   TARGET     e.g. scenario nccl_log (default: every edgc_fuzz_* binary in BUILD_DIR/tests/fuzz)
#
# Each target reads its seeds (BUILD_DIR/tests/fuzz/seeds/T: links to bundled files and test data) and the inputs of
# past findings (tests/fuzz/regressions/T), and grows its own corpus in BUILD_DIR/tests/fuzz/corpus/T (kept
# between runs). A finding (crash, sanitizer report, foreign exception, an input over --timeout seconds or 2 GB)
# stops that target and leaves the input in BUILD_DIR/tests/fuzz/findings/T/.
# Prints one line per target: executions, seconds, new corpus size, findings. Exit code 1 when any target found
# something. Runs under nice: the fuzzers share the machine.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { sed -n '2,19p' "$0"; exit 2; }
build=$(cd "$1" && pwd)
shift
runs=1000000
seconds=1200
timeout=10
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift ;;
    --time) seconds=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "run_fuzzers.sh: unknown option '$1'" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
fuzz="$build/tests/fuzz"
if [ ${#targets[@]} -eq 0 ]; then
  for b in "$fuzz"/edgc_fuzz_*; do [ -x "$b" ] && targets+=("${b##*/edgc_fuzz_}"); done
fi
[ ${#targets[@]} -gt 0 ] || { echo "run_fuzzers.sh: no fuzz targets in $fuzz (build them first)" >&2; exit 2; }

status=0
printf '%-16s %12s %9s %8s %s\n' target executions seconds corpus findings
for t in "${targets[@]}"; do
  bin="$fuzz/edgc_fuzz_$t"
  [ -x "$bin" ] || { echo "run_fuzzers.sh: $bin is missing" >&2; exit 2; }
  mkdir -p "$fuzz/corpus/$t" "$fuzz/findings/$t"
  dict=()
  regressions=()  # past findings (tests/fuzz/regressions/T): read first, like the seeds, never written
  [ -d "$here/regressions/$t" ] && regressions=("$here/regressions/$t")
  [ -f "$here/$t.dict" ] && dict=(-dict="$here/$t.dict")
  log="$fuzz/findings/$t.log"
  stamp="$fuzz/findings/.$t.start"
  touch "$stamp"
  start=$(date +%s)
  rc=0
  nice -n 10 "$bin" "${dict[@]}" -runs="$runs" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout="$timeout" \
    -print_final_stats=1 -artifact_prefix="$fuzz/findings/$t/" "$fuzz/corpus/$t" "$fuzz/seeds/$t" \
    "${regressions[@]}" >"$log" 2>&1 || rc=$?
  elapsed=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  found=$(find "$fuzz/findings/$t" -type f -newer "$stamp" | wc -l)
  [ "$rc" -ne 0 ] && found=$((found > 0 ? found : 1)) && status=1
  printf '%-16s %12s %9s %8s %s\n' "$t" "${execs:-?}" "$elapsed" "$(find "$fuzz/corpus/$t" -type f | wc -l)" \
    "$found$([ "$rc" -ne 0 ] && echo " (see $log)")"
done
exit $status
