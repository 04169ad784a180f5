#!/bin/sh
# Closes the loop on this machine: calibrate on one live configuration, predict another, measure it.
#   tools/live_check.sh [OUT [RUNS [RANKS]]]     (defaults: a temporary directory, 3 runs, 2 ranks)
# RUNS launches of the calibration run (scenarios/live/tinygpt-cpu.json: policies none and edgc, ranks 4..12), then
# RUNS launches of another policy and rank schedule (static rank 8), each `mpirun -np RANKS edgc live`; then
# `edgc validate` of the second configuration, pooled over its launches, priced by the first's calibration pooled
# over its launches (medians). Prints each launch's line and validate's tables and verdict. Run it on an idle
# machine with RANKS no more than its cores.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(mktemp -d)}
runs=${2:-3}
ranks=${3:-2}
edgc="$here/build/tools/edgc"
scenario="$here/scenarios/live/tinygpt-cpu.json"
[ -x "$edgc" ] || { echo "live_check: build first (tools/setup.sh)" >&2; exit 2; }
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
cal=""
meas=""
i=1
while [ "$i" -le "$runs" ]; do
  rm -rf "$out/calibration-$i" "$out/measured-$i"
  mpirun -np "$ranks" "$edgc" live --scenario "$scenario" --out "$out/calibration-$i" > "$out/calibration-$i.log"
  mpirun -np "$ranks" "$edgc" live --scenario "$scenario" --set compression.policy=static \
    --set compression.r_max=8 --out "$out/measured-$i" > "$out/measured-$i.log"
  echo "launch $i: $out/calibration-$i (none, edgc 4..12), $out/measured-$i (none, static 8)"
  cal="$cal --calibration $out/calibration-$i"
  meas="$meas --measured $out/measured-$i"
  i=$((i + 1))
done
# shellcheck disable=SC2086 # the option lists are meant to split
"$edgc" validate $meas $cal --out "$out/validate.json"
