#!/usr/bin/env bash
# End-to-end checks of the command line: exit codes, messages, JSON keys.
# usage: cli_test.sh SHARDWISE_BINARY TEST_DATA_DIR SHARED_DIR
set -u
bin=$1 data=$2 shared=$3
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# expect CODE PATTERN -- ARGS...: run, check the exit code and that stdout+stderr match PATTERN
expect() {
  local code=$1 pattern=$2; shift 3
  "$bin" "$@" >"$tmp/out" 2>&1; local rc=$?
  if [ "$rc" != "$code" ]; then bad "'$*' exited $rc, want $code: $(head -c 400 "$tmp/out")"; return; fi
  if ! grep -qE -- "$pattern" "$tmp/out"; then bad "'$*' output lacks /$pattern/: $(head -c 400 "$tmp/out")"; return; fi
  ok
}

expect 0 'describe' -- --help
expect 0 '--weights-dtype' -- describe --help
expect 0 'shardwise 0\.1\.0' -- --version
expect 0 'deepseek-v3 .*DeepseekV3ForCausalLM' -- models
expect 0 '"params_total": 8030261248' -- models --json
expect 0 'gb200' -- clusters
expect 0 'decode-64k' -- workloads
expect 0 '"kv_bytes_per_token": 327680' -- describe --model llama-3.1-70b --json
expect 0 '"kv_bytes_per_token": 70272' -- describe --model deepseek-v3 --json
expect 0 '"params_active": 37552297472' -- describe --model deepseek-v3 --json
expect 0 '"kv_bytes_per_token": 35136' -- describe --model deepseek-v3 --kv-dtype fp8 --json
expect 0 'weights +671\.0 GB in fp8' -- describe --model deepseek-v3 --weights-dtype fp8
expect 0 '3 dense, 58 MoE' -- describe --model deepseek-v3
expect 0 'nvlink +72' -- describe --cluster "$data/good/cluster-nvl72.yaml"
expect 0 'context 4,096' -- describe --workload decode-16k --context 4096
expect 0 '"model"' -- describe --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --json
if [ -f "$shared/models/qwen3-235b-a22b.json" ]; then
  expect 0 'Qwen3MoeForCausalLM' -- describe --model "$shared/models/qwen3-235b-a22b.json"
fi

# Bad input: exit code 2, a message naming the file and the field, no crash.
expect 2 'm07-heads-not-dividing\.json: field .num_attention_heads.' -- describe --model "$data/bad/m07-heads-not-dividing.json"
expect 2 'c01-unknown-gpu\.yaml: field .gpu.' -- describe --cluster "$data/bad/c01-unknown-gpu.yaml"
expect 2 'w03-negative-batch\.yaml: field .batch.' -- describe --workload "$data/bad/w03-negative-batch.yaml"
expect 2 'no-such-file\.json. *$|preset name' -- describe --model no-such-file.json
expect 2 'expected a known GPU' -- describe --cluster v100x8
expect 2 'count from 1 to 24576' -- describe --cluster h100x30000
expect 2 '--batch: expected a positive number' -- describe --workload decode-16k --batch 0
expect 2 'at least one of --model' -- describe
expect 2 'bogus' -- describe --model llama-3.1-8b --bogus
expect 2 'shardwise' -- frobnicate
for f in "$data"/bad/m*.json; do expect 2 'expected' -- describe --model "$f"; done
for f in "$data"/bad/c*.yaml; do expect 2 'expected' -- describe --cluster "$f"; done
for f in "$data"/bad/w*.yaml; do expect 2 'expected' -- describe --workload "$f"; done

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
