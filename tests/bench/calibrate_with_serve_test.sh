#!/usr/bin/env bash
# bench/calibrate --with-serve is a comparison: the serving rows enter the fit (its objective
# scores them beside the others), it prints every figure under that fit, and it never
# writes data/calibration/, even with --write.
# usage: calibrate_with_serve_test.sh CALIBRATE_BINARY REPO_DIR
set -u
bin=$1 repo=$2
. "$(dirname "$0")/calibration_backup.sh"  # $tmp, and data/calibration/ restored on exit
fail=0
# a subset of the shared rows keeps it quick (the whole file's fit runs rows 1-13 as trtllm-bench
# runs: minutes): Hopper's dense static and TTFT rows (40-46) and MoE rows (103, 104, 118, 119),
# two Blackwell rows (100, 114), and the closed-loop serving rows (123-128, 158-161)
grep -E '^(row_id|4[0-6]|100|114|103|104|118|119|12[3-8]|15[89]|16[01]),' "$repo/../shared/calibration/public-measurements.csv" >"$tmp/rows.csv"
[ "$(grep -c "" "$tmp/rows.csv")" -eq 24 ] || { echo "FAIL: the subset has $(grep -c "" "$tmp/rows.csv") lines, not 24"; exit 1; }
timeout 120 "$bin" --with-serve --write "$tmp/rows.csv" >"$tmp/out" 2>&1 || { echo "FAIL: exit $?: $(tail -c 300 "$tmp/out")"; exit 1; }
for f in "$tmp"/*.yaml; do
  cmp -s "$f" "$repo/data/calibration/$(basename "$f")" || { echo "FAIL: --with-serve --write changed $(basename "$f")"; fail=1; }
done
grep -q '^with the serving rows fitted, the rows that are not serving: all ' "$tmp/out" || { echo "FAIL: no figures under the fit"; fail=1; }
for m in tpot tput ttft; do
  grep -q "^  serve $m " "$tmp/out" || { echo "FAIL: no serving $m line"; fail=1; }
done
# the serving rows entered Hopper's fit: the same subset without --with-serve fits the 10 Hopper
# rows (40-45, 103, 104, 118, 119; 46 is an A100's) alone, with it 14 more checks (output tok/s of
# 123-128 and 158-161, mean TPOT of 158-161), each scored in the fit's objective. (No trait of
# this subset's fit moves with them since session 29: their MoE layers run the engines' measured
# Triton kernel at TP8, where neither expert_skew nor expert_mem_efficiency enters.)
timeout 120 "$bin" "$tmp/rows.csv" >"$tmp/plain" 2>&1 || { echo "FAIL: the plain fit exited $?"; exit 1; }
grep -q '^Hopper (H100, H200): 10 rows$' "$tmp/plain" || { echo "FAIL: plain: $(grep '^Hopper' "$tmp/plain")"; fail=1; }
grep -q '^Hopper (H100, H200): 24 rows$' "$tmp/out" || { echo "FAIL: --with-serve: $(grep '^Hopper' "$tmp/out")"; fail=1; }
grep -q '^# Fit: .* over the 10 rows it was fitted on\.$' "$tmp/plain" || { echo "FAIL: plain scored: $(grep '^# Fit' "$tmp/plain" | head -1)"; fail=1; }
grep -q '^# Fit: .* over the 24 rows it was fitted on\.$' "$tmp/out" || { echo "FAIL: --with-serve scored: $(grep '^# Fit' "$tmp/out" | head -1)"; fail=1; }
[ $fail -eq 0 ] && echo "calibrate --with-serve: ok"
exit $fail
