#!/usr/bin/env bash
# bench/calibrate --refit-comm and --refit-general start from the shipped fits and move only
# their knobs (the two collective ones; every general one), only on a silicon whose step the
# engines' measured custom all-reduce changed (Hopper): Blackwell's fit is printed as shipped.
# Without --write nothing under data/calibration/ changes.
# usage: calibrate_refit_test.sh CALIBRATE_BINARY REPO_DIR
set -u
bin=$1 repo=$2
. "$(dirname "$0")/calibration_backup.sh"  # $tmp, and data/calibration/ restored on exit
fail=0
# a quick subset: Hopper's static and TTFT rows (40-45), two MoE rows (103, 104), two Blackwell rows
grep -E '^(row_id|4[0-5]|103|104|100|114),' "$repo/../shared/calibration/public-measurements.csv" >"$tmp/rows.csv"
knob() { grep "^$2: " "$1" | head -1 | sed "s/^$2: //"; }              # a knob of a yaml file
printed() { awk -v g="$2" '$0 == "gpu: " g {on=1} on && /^[a-z_]+: / {print} on && /^expert_mem_efficiency/ {exit}' "$1" | grep "^$3: " | sed "s/^$3: //"; }
for mode in comm general; do
  timeout 150 "$bin" --refit-$mode "$tmp/rows.csv" >"$tmp/out" 2>&1 || { echo "FAIL: --refit-$mode exited $?: $(tail -c 300 "$tmp/out")"; exit 1; }
  for f in "$tmp"/*.yaml; do
    cmp -s "$f" "$repo/data/calibration/$(basename "$f")" || { echo "FAIL: --refit-$mode without --write changed $(basename "$f")"; fail=1; }
  done
  grep -q "no custom all-reduce table for b200: the shipped fit" "$tmp/out" || { echo "FAIL: --refit-$mode: Blackwell not kept"; fail=1; }
  # Blackwell printed exactly as shipped (to the printed precision)
  for k in gemm_efficiency gemm_half_rows mem_efficiency attn_efficiency kernel_overhead_us comm_efficiency comm_overhead_us \
           attn_mem_efficiency step_overhead_us expert_skew expert_mem_efficiency; do
    a=$(printed "$tmp/out" b200 $k) b=$(knob "$repo/data/calibration/b200.yaml" $k)
    awk -v a="$a" -v b="$b" 'BEGIN { exit !(a + 0 == b + 0) }' || { echo "FAIL: --refit-$mode moved b200 $k: $b -> $a"; fail=1; }
  done
  # Hopper: the knobs outside the refit as shipped
  if [ $mode = comm ]; then kept="gemm_efficiency gemm_half_rows mem_efficiency attn_efficiency kernel_overhead_us attn_mem_efficiency step_overhead_us expert_skew expert_mem_efficiency"
  else kept="expert_skew expert_mem_efficiency"; fi
  for k in $kept; do
    a=$(printed "$tmp/out" h100 $k) b=$(knob "$repo/data/calibration/h100.yaml" $k)
    awk -v a="$a" -v b="$b" 'BEGIN { exit !(a + 0 == b + 0) }' || { echo "FAIL: --refit-$mode moved h100 $k: $b -> $a"; fail=1; }
  done
  grep -q "the $([ $mode = comm ] && echo collective || echo general) knobs on the 8 rows, from the shipped fit" "$tmp/out" || { echo "FAIL: --refit-$mode: $(grep 'knobs on' "$tmp/out")"; fail=1; }
  # and the refit moved at least one of its own knobs on these rows (the descent ran)
  moved=0
  for k in comm_efficiency comm_overhead_us; do
    a=$(printed "$tmp/out" h100 $k) b=$(knob "$repo/data/calibration/h100.yaml" $k)
    awk -v a="$a" -v b="$b" 'BEGIN { exit !(a + 0 != b + 0) }' && moved=1
  done
  [ $moved -eq 1 ] || { echo "FAIL: --refit-$mode moved neither collective knob"; fail=1; }
done
[ $fail -eq 0 ] && echo "calibrate --refit-comm / --refit-general: ok"
exit $fail
