#!/usr/bin/env bash
# The bad-input corpus through the command line: every file under tests/data/bad must
# give exit 2 (never 0, 1 or a signal), a message that starts with the file's path, and
# the clause EXPECTED.tsv names for it (field, expected, found). Files m* are model
# configs (describe --model), c* clusters (describe --cluster), w* workloads (describe
# --workload), p* plan files (simulate --plan and launch --plan), s* sharding files
# (simulate --sharding), y* policy files (plan --load-policy), r* price tables (sweep --prices),
# t* serving traces (CSV or JSONL, named by a workload file: describe --workload).
# usage: bad_corpus_test.sh SHARDWISE_BINARY BAD_DIR
set -u
bin=$1 dir=$2
pass=0 fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

check() {  # FILE WANT ARGS...: run, then judge the exit code and the message
  local file=$1 want=$2; shift 2
  timeout 60 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local msg; msg=$(grep -m1 '^shardwise: ' "$tmp/err")
  if [ "$rc" -ne 2 ]; then
    echo "FAIL: $* exited $rc (want 2; >128 is a signal): $(head -c 300 "$tmp/err")"; fail=$((fail + 1)); return
  fi
  case "$msg" in
    "shardwise: $file: "*) ;;
    *) echo "FAIL: $*: the message does not start with the file: $msg"; fail=$((fail + 1)); return ;;
  esac
  if [[ "$msg" != *"$want"* ]]; then
    echo "FAIL: $*:"; echo "  got:  $msg"; echo "  want: $want"; fail=$((fail + 1)); return
  fi
  pass=$((pass + 1))
}

declare -A want
while IFS=$'\t' read -r name clause; do
  [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
  want[$name]=$clause
done <"$dir/EXPECTED.tsv"

files=0
for f in "$dir"/*; do
  name=$(basename "$f")
  [ "$name" = EXPECTED.tsv ] && continue
  files=$((files + 1))
  if [ -z "${want[$name]+x}" ]; then echo "FAIL: $name has no line in EXPECTED.tsv"; fail=$((fail + 1)); continue; fi
  w=${want[$name]}
  case "$name" in
    m*) check "$f" "$w" describe --model "$f" ;;
    c*) check "$f" "$w" describe --cluster "$f" ;;
    w*) check "$f" "$w" describe --workload "$f" ;;
    p*) check "$f" "$w" simulate --plan "$f"
        check "$f" "$w" launch --plan "$f" --engine vllm ;;
    s*) check "$f" "$w" simulate --model llama-3.1-8b --cluster h100x8 --batch 8 --sharding "$f" ;;
    r*) check "$f" "$w" sweep --model llama-3.1-8b --gpus h100 --counts 8 --prices "$f" ;;
    y*) check "$f" "$w" plan --model llama-3.1-8b --cluster h100x8 --workload decode-16k --search rl-paper --budget 5 --load-policy "$f" ;;
    t*) abs=$(cd "$(dirname "$f")" && pwd)/$name  # a workload's trace path is relative to the workload file
        printf 'name: trace\nmode: serve\narrivals: {pattern: trace, file: "%s"}\n' "$abs" >"$tmp/trace-workload.yaml"
        check "$abs" "$w" describe --workload "$tmp/trace-workload.yaml" ;;
    *) echo "FAIL: $name: no command for this prefix"; fail=$((fail + 1)) ;;
  esac
done
[ "$files" -ge 80 ] || { echo "FAIL: only $files corpus files (expected at least 80)"; fail=$((fail + 1)); }
echo "bad corpus: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
