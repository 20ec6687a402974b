#!/usr/bin/env bash
# shardwise sweep under mpirun: the points spread over N processes and gathered on rank 0
# must print (and write as CSV and JSON) exactly what one process does.
# usage: sweep_mpi_test.sh SHARDWISE_BINARY MPIEXEC N
set -u
bin=$1 mpiexec=$2 n=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
args=(sweep --model llama-3.1-70b --gpus h100,h200,b200,a100 --counts 4,8,16,32,64,128)
fails=0
"$bin" "${args[@]}" --csv "$tmp/one.csv" >"$tmp/one.txt" || { echo "FAIL: the single-process sweep exited $?"; exit 1; }
"$bin" "${args[@]}" --json >"$tmp/one.json"
"$mpiexec" -q -n "$n" --oversubscribe --bind-to none "$bin" "${args[@]}" --csv "$tmp/many.csv" >"$tmp/many.txt" ||
  { echo "FAIL: the sweep on $n processes exited $?"; exit 1; }
"$mpiexec" -q -n "$n" --oversubscribe --bind-to none "$bin" "${args[@]}" --json >"$tmp/many.json"
for kind in txt csv json; do
  if cmp -s "$tmp/one.$kind" "$tmp/many.$kind"; then echo "ok   $kind identical on $n processes"; else
    echo "FAIL $kind differs on $n processes:"; diff "$tmp/one.$kind" "$tmp/many.$kind" | head -10; fails=$((fails + 1)); fi
done
# a serving sweep (disaggregated points, a skipped engine, an unpriced GPU) gathers exactly too
sargs=(sweep --model llama-3.1-8b --gpus h100,mi300x --counts 2,4 --engines vllm,trtllm --mode serve --slo "ttft:p99<=2000,tpot:p90<=50"
  --requests 200 --top-k 3)
"$bin" "${sargs[@]}" --csv "$tmp/sone.csv" >"$tmp/sone.txt" || { echo "FAIL: the single-process serving sweep exited $?"; exit 1; }
"$mpiexec" -q -n "$n" --oversubscribe --bind-to none "$bin" "${sargs[@]}" --csv "$tmp/smany.csv" >"$tmp/smany.txt" ||
  { echo "FAIL: the serving sweep on $n processes exited $?"; exit 1; }
for kind in txt csv; do
  if cmp -s "$tmp/sone.$kind" "$tmp/smany.$kind"; then echo "ok   serving $kind identical on $n processes"; else
    echo "FAIL serving $kind differs on $n processes:"; diff "$tmp/sone.$kind" "$tmp/smany.$kind" | head -10; fails=$((fails + 1)); fi
done
grep -q '^skipped      trtllm on mi300x' "$tmp/sone.txt" || { echo "FAIL: the serving sweep printed no skip line"; fails=$((fails + 1)); }
[ "$(grep -c 'h100\|h200\|b200\|a100' "$tmp/one.txt")" -ge 24 ] || { echo "FAIL: the sweep printed fewer than 24 points"; fails=$((fails + 1)); }
echo "sweep over mpirun -n $n: $fails failure(s)"
[ "$fails" -eq 0 ]
