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
# 37,552,297,472 - 129,280 x 7,168 (the input embedding, 926,679,040) = 36,625,618,432: DeepSeek's "37B"
expect 0 '"params_active_without_input_embedding": 36625618432' -- describe --model deepseek-v3 --json
expect 0 'active without the input embedding 36.63 B' -- describe --model deepseek-v3
expect 0 '"kv_bytes_per_token": 35136' -- describe --model deepseek-v3 --kv-dtype fp8 --json
expect 0 'weights +671\.0 GB in fp8' -- describe --model deepseek-v3 --weights-dtype fp8
expect 0 '3 dense, 58 MoE' -- describe --model deepseek-v3
expect 0 'expert_ffn1 +expert_ffn1 +\[experts=256' -- describe --model deepseek-v3 --ops
expect 0 'dispatch +\(fixed\)' -- describe --model mixtral-8x7b --ops
expect 0 'nvlink +72' -- describe --cluster "$data/good/cluster-nvl72.yaml"
expect 0 'context 4,096' -- describe --workload decode-16k --context 4096
expect 0 '"model"' -- describe --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --json
if [ -f "$shared/models/qwen3-235b-a22b.json" ]; then
  expect 0 'Qwen3MoeForCausalLM' -- describe --model "$shared/models/qwen3-235b-a22b.json"
fi

# simulate: the JSON contract scripts depend on
for key in feasible reason throughput_tok_s_per_gpu input_tok_s_per_gpu tpot_ms ttft_ms memory_gb_per_gpu batch gpus_used breakdown; do
  expect 0 "\"$key\":" -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --batch 16 --json
done
expect 0 '"collective": "all-reduce"' -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --batch 16 --json
expect 0 'ffn2 +hidden .*all-gather' -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --batch 16 --sharding allgather
expect 0 'INFEASIBLE +out of memory: needs' -- simulate --model llama-3.1-405b --cluster h100x8 --tp 1 --batch 1
# an invalid plan is bad input (exit 2, the flags named); an infeasible one is a result (exit 0, above)
expect 2 '^shardwise: --tp 3 --batch 1: expected a plan valid on llama-3.1-70b and h100x8, found tp 3 does not divide' -- simulate --model llama-3.1-70b --cluster h100x8 --tp 3 --batch 1
expect 0 'moe:dispatch .*all-to-all' -- simulate --model deepseek-v3 --cluster h100x64 --tp 8 --attn-dp 8 --ep 64 --batch 64 --weights-dtype fp8
printf 'attention: context\n' > "$tmp/shard.yaml"
expect 0 'sharding +attention=context' -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --batch 16 --sharding "$tmp/shard.yaml"
cat > "$tmp/plan.json" <<'PLAN'
{"schema": "shardwise-plan/1", "model": "llama-3.1-8b", "cluster": "h100x8", "workload": "decode-16k",
 "degrees": {"tp": 2, "pp": 1, "ep": 1, "attn_dp": 1, "replicas": 4}, "batch": 32, "micro_batches": 0,
 "sharding": {"ffn2": "hidden"}}
PLAN
expect 0 'tp 2 x attn_dp 1 x pp 1.*replicas 4 = 8 GPUs' -- simulate --plan "$tmp/plan.json"
printf 'attention: tokens\n' > "$tmp/bad-shard.yaml"
expect 2 "field 'attention': expected one of heads, context, none" -- simulate --model llama-3.1-8b --cluster h100x8 --sharding "$tmp/bad-shard.yaml"
expect 2 "simulate: expected --model" -- simulate --cluster h100x8

# plan: a search, the Megatron baseline beside it, and plan.json read back to identical metrics
expect 0 'baseline +Megatron heuristic' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --budget 500
expect 0 '"baseline_megatron":' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --budget 500 --json
expect 0 '"evaluations": 500' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search ga --budget 500 --json
expect 0 '"engine": "rl"' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --budget 300 --search rl --json
expect 0 '"search_auto": true' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --json
expect 0 '^choice +--search auto: exact, the certified optimum' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k
"$bin" plan --model mixtral-8x7b --cluster h100x16 --workload decode-16k --context 4096 --kv-dtype fp8 --search ga --budget 800 \
  --threads 2 --out "$tmp/best.json" --json > "$tmp/plan.out" 2>&1
planned=$(sed -n '/"metrics"/,$p' "$tmp/plan.out" | grep -m1 '"throughput_tok_s_per_gpu"' | tr -d ' ')
replayed=$("$bin" simulate --plan "$tmp/best.json" --json | grep -m1 '"throughput_tok_s_per_gpu"' | tr -d ' ')
if [ -n "$planned" ] && [ "$planned" = "$replayed" ]; then ok; else bad "plan --out then simulate --plan: '$planned' vs '$replayed'"; fi
one=$("$bin" plan --model mixtral-8x7b --cluster h100x16 --workload decode-16k --search ga --budget 800 --seed 7 --threads 1 --json | grep -m1 '"sharding"')
two=$("$bin" plan --model mixtral-8x7b --cluster h100x16 --workload decode-16k --search ga --budget 800 --seed 7 --threads 2 --json | grep -m1 '"sharding"')
if [ "$one" = "$two" ]; then ok; else bad "the same seed gave different plans with 1 and 2 threads"; fi
expect 2 '--search: expected one of auto, exact, megatron, rw, sa, ga, rl, rl-paper' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search magic
expect 2 '--budget: expected a positive number' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --budget 0

# The HTML report and engines compared beside the chosen one
expect 0 '^sa .*100\.0%' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search sa --compare rw,ga --budget 300 --report "$tmp/r.html"
if grep -q 'data-chart="frontier"' "$tmp/r.html" && grep -q '<td>ga</td>' "$tmp/r.html"; then ok; else bad "--report wrote no frontier chart or no ga row"; fi
expect 0 '"compared": \[' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --compare rw --budget 100 --json
expect 2 '--compare: expected engine names from auto, exact, megatron' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --compare rw,magic
expect 2 '--report: expected a writable file path' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --report /no/such/dir/r.html

# launch: commands for a saved plan
expect 0 'search' -- plan --model deepseek-v3 --cluster h100x64 --workload decode-16k --kv-dtype fp8 --weights-dtype fp8 --search exact --out "$tmp/ds.json"
expect 0 '--data-parallel-start-rank 8' -- launch --plan "$tmp/ds.json" --engine vllm
expect 0 '--node-rank 3' -- launch --plan "$tmp/ds.json" --engine sglang --head-address node0.cluster.local
expect 0 'trtllm-llmapi-launch trtllm-serve /models/ds' -- launch --plan "$tmp/ds.json" --engine trtllm --model-path /models/ds
expect 2 '--engine: expected one of vllm, sglang, trtllm, found .tgi.' -- launch --plan "$tmp/ds.json" --engine tgi
expect 2 'no-such\.json' -- launch --plan "$tmp/no-such.json" --engine vllm
expect 2 '--port: expected a TCP port' -- launch --plan "$tmp/ds.json" --engine vllm --port 70000

# RL: policy saved and loaded again
expect 0 'time split +policy network' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search rl-paper --budget 100 --save-policy "$tmp/pol.txt"
expect 0 'search +rl-paper ' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search rl-paper --budget 100 --load-policy "$tmp/pol.txt"
# rl runs no network: it says so, and refuses a policy file
expect 0 'time split +proposals .* \(no network: a masked local search\)' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search rl --budget 100
expect 2 'expected --search rl-paper \(the engine with a policy network; rl runs none' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search rl --budget 100 --save-policy "$tmp/x"
# a policy trained on GPT-MoE-1.2T carried to 1.6T (the pp head differs: 3 of its values are new)
expect 0 'search +rl-paper' -- plan --model gpt-moe-1.2t --cluster h100x24576 --workload decode-32k --search rl-paper --budget 60 --save-policy "$tmp/p12.txt"
expect 0 "it knew 82 of this space's 85 action values" -- plan --model gpt-moe-1.6t --cluster h100x24576 --workload decode-32k --search rl-paper --budget 60 --load-policy "$tmp/p12.txt"
# as a version-1 file (no labels) it cannot be carried over: said, and the search starts cold
sed -e '1s|shardwise-policy/2|shardwise-policy/1|' -e '3,20d' "$tmp/p12.txt" > "$tmp/p12v1.txt"
expect 0 'cannot be carried to this space \(.*labels.*\); started cold' -- plan --model gpt-moe-1.6t --cluster h100x24576 --workload decode-32k --search rl-paper --budget 60 --load-policy "$tmp/p12v1.txt"
# a label line cut short is named
sed '5s/ [^ ]*$//' "$tmp/p12.txt" > "$tmp/p12cut.txt"
expect 2 'p12cut.txt.*labels of action head 1' -- plan --model gpt-moe-1.6t --cluster h100x24576 --workload decode-32k --search rl-paper --budget 60 --load-policy "$tmp/p12cut.txt"
expect 2 'expected --search rl-paper' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search ga --save-policy "$tmp/x"
expect 2 'expected a policy saved by shardwise' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --search rl-paper --load-policy "$data/bad/EXPECTED.tsv"

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


# --- issue 16: bad input is exit 2 everywhere, with the flag or file named; never a signal
M8="--model llama-3.1-8b --cluster h100x8"
expect 2 '^shardwise: --tp: expected an integer from 1 to 1048576, found 0' -- simulate $M8 --tp 0
expect 2 '^shardwise: --tp: expected an integer from 1 to 1048576, found -1' -- simulate $M8 --tp -1
expect 2 '^shardwise: --replicas: expected an integer from 1 to 1048576, found 0' -- simulate $M8 --replicas 0
expect 2 '^shardwise: --micro-batches: expected an integer from 0 to 1048576, found -1' -- simulate $M8 --micro-batches -1
expect 2 '^shardwise: --pp: expected an integer from 1 to 1048576, found 2147483647' -- simulate $M8 --pp 2147483647
expect 2 '^shardwise: --pp 33: expected a plan valid on llama-3.1-8b and h100x8, found pp 33 exceeds the 32 layers' -- simulate $M8 --pp 33
expect 2 '^shardwise: --pp 8: expected a plan valid on llama-3.1-8b and h100x8, found the plan needs 8 GPUs|needs' -- simulate $M8 --pp 8 --tp 2
expect 2 '^shardwise: --seed: expected an integer from 0 to 18446744073709551615, found .-1.' -- plan $M8 --workload decode-16k --budget 5 --seed -1
expect 2 '^shardwise: --seed: expected an integer' -- plan $M8 --workload decode-16k --budget 5 --seed 18446744073709551616
expect 0 'plan ' -- plan $M8 --workload decode-16k --budget 5 --seed 18446744073709551615
expect 2 '^shardwise: --time-limit: expected a number of seconds from 0 \(none\) to 604800 \(a week\), found nan' -- plan $M8 --workload decode-16k --budget 5 --time-limit nan
expect 2 '^shardwise: --time-limit: expected a number of seconds from 0 \(none\) to 604800 \(a week\), found inf' -- plan $M8 --workload decode-16k --budget 5 --time-limit inf
expect 2 '^shardwise: --threads: expected a thread count from 1 to 256 \(0: all cores\), found -1' -- plan $M8 --workload decode-16k --budget 5 --threads -1
expect 2 '^shardwise: --threads: expected a thread count from 1 to 256 \(0: all cores\), found 100000' -- plan $M8 --workload decode-16k --budget 5 --threads 100000
expect 2 '^shardwise: --isl: expected no isl for a decode workload' -- simulate $M8 --isl 100
long=$(printf 'a%.0s' $(seq 1 300))
expect 2 '^shardwise: --report: expected a writable file path' -- plan $M8 --workload decode-16k --budget 5 --report "$long/$long/r.html"
ln -s "$tmp/loop" "$tmp/loop"
expect 2 '^shardwise: --report: expected a writable file path' -- plan $M8 --workload decode-16k --budget 5 --report "$tmp/loop/r.html"
expect 2 '^shardwise: --out: expected a writable file path' -- plan $M8 --workload decode-16k --budget 5 --out "$tmp"
expect 2 "^shardwise: $tmp: expected a file, found a directory" -- simulate --plan "$tmp"
expect 2 "^shardwise: $tmp: expected a file, found a directory" -- launch --plan "$tmp" --engine vllm
# nothing feasible: exit 0 with the closest plan and the limit it broke (memory, by how much)
expect 0 'closest +tp .*: out of memory' -- plan --model llama-3.1-405b --cluster h100x1 --workload decode-16k --budget 50
expect 0 'why +needs [0-9.]+ GB per GPU .* over by [0-9.]+ GB' -- plan --model llama-3.1-405b --cluster h100x1 --workload decode-16k --budget 50
expect 0 '"closest": \{' -- plan --model llama-3.1-405b --cluster h100x1 --workload decode-16k --budget 50 --json
# ... and an SLO no plan meets: which SLO, by how much
expect 0 'why +TPOT [0-9.]+ ms exceeds the SLO of 1 ms by' -- plan $M8 --workload decode-16k --budget 50 --tpot-ms 1
# with --out the result is printed, then the refusal to write (exit 2), and no file is left
expect 2 'closest .*\n?|shardwise: --out: expected a feasible plan to write to' -- plan --model llama-3.1-405b --cluster h100x1 --workload decode-16k --budget 50 --out "$tmp/none.json"
[ ! -e "$tmp/none.json" ] && ok || bad "plan --out with nothing feasible left a file"
# a plan file's values are the file's: a bad batch override, an unknown model
printf '{"schema":"shardwise-plan/1","model":"llama-3.1-8b","cluster":"h100x8","workload":"decode-16k","degrees":{"tp":2},"batch":4,"workload_overrides":{"tpot_ms":0}}' >"$tmp/slo0.json"
expect 2 "^shardwise: $tmp/slo0.json: field 'workload_overrides.tpot_ms'" -- simulate --plan "$tmp/slo0.json"
# flags beside a plan file are named with it
printf '{"schema":"shardwise-plan/1","model":"llama-3.1-8b","cluster":"h100x8","workload":"decode-16k","degrees":{"tp":2},"batch":4}' >"$tmp/ok.json"
expect 0 'tp 2 x attn_dp 1' -- simulate --plan "$tmp/ok.json"
expect 2 "^shardwise: $tmp/ok.json with --tp 3: expected a plan valid on llama-3.1-8b and h100x8, found tp 3 does not divide" -- simulate --plan "$tmp/ok.json" --tp 3

expect 2 '^shardwise: --tp: expected an integer from 1 to 1048576, found 0' -- verify --model llama-3.1-8b --tp 0
expect 2 '^shardwise: --decode-steps: expected decode steps from 0 to 16, found -5' -- verify --model llama-3.1-8b --decode-steps -5
# MoE deployments (issue 13): redundant experts, a checkpoint's own formats, speculative decoding
expect 0 'ep 72, expert tp 1, 32 redundant expert slots' -- simulate --model deepseek-v3 --cluster h200x72 --workload chat-1k-1k --attn-dp 72 --ep 72 --redundant-experts 32 --sharding dp-mlp
expect 0 'weights fp8 \(the checkpoint.s fp8\)' -- simulate --model deepseek-v3 --cluster h200x72 --workload chat-1k-1k --attn-dp 72 --ep 72 --redundant-experts 32 --sharding dp-mlp
expect 2 'ep 72 does not divide the 256 experts \(redundant experts can make up the difference: --redundant-experts 32\)' -- simulate --model deepseek-v3 --cluster h200x72 --attn-dp 72 --ep 72 --sharding dp-mlp
expect 2 '^shardwise: --redundant-experts: expected an integer from 0' -- simulate --model deepseek-v3 --cluster h200x8 --redundant-experts -1
expect 0 'weights attention bf16, dense fp4, experts fp4 \(the checkpoint.s modelopt:NVFP4\), KV cache fp8' -- simulate --model "$data/models/deepseek-r1-nvfp4/config.json" --cluster gb200x8 --workload chat-1k-1k --attn-dp 8 --ep 8 --sharding dp-mlp
expect 0 '"experts": "fp4"' -- simulate --model "$data/models/deepseek-r1-nvfp4/config.json" --cluster gb200x8 --workload chat-1k-1k --attn-dp 8 --ep 8 --sharding dp-mlp --json
expect 0 'weights bf16, KV cache bf16' -- simulate --model deepseek-v3 --cluster h200x8 --weights-dtype bf16 --kv-dtype bf16 --tp 8 --ep 8 --batch 1
expect 0 'experts fp4' -- simulate --model deepseek-v3 --cluster b200x8 --expert-dtype fp4 --tp 8 --ep 8 --batch 1
expect 0 'speculative  3 draft tokens at acceptance 0.85: 3.19 tokens per sequence per step' -- simulate --model deepseek-v3 --cluster h200x8 --tp 8 --ep 4 --batch 1 --spec-tokens 3 --spec-acceptance 0.85
expect 2 '^shardwise: --spec-acceptance: expected a probability from 0 to 1, found 1.5' -- simulate --model deepseek-v3 --cluster h200x8 --tp 8 --spec-tokens 3 --spec-acceptance 1.5
# --spec-tokens alone: DeepSeek-V3's MTP acceptance (0.85, noted); a model without MTP modules needs one
expect 0 'speculative  3 draft tokens at acceptance 0.85: 3.19 tokens per sequence per step' -- simulate --model deepseek-v3 --cluster h200x8 --tp 8 --ep 4 --batch 1 --spec-tokens 3
expect 0 "note: --spec-acceptance 0.85: deepseek-v3's MTP module" -- simulate --model deepseek-v3 --cluster h200x8 --tp 8 --ep 4 --batch 1 --spec-tokens 3
expect 2 "^shardwise: --spec-acceptance: expected a probability from 0 to 1 beside --spec-tokens .*llama-3.1-8b has no MTP modules" -- simulate --model llama-3.1-8b --cluster h100x8 --tp 1 --spec-tokens 2
expect 2 '^shardwise: --expert-dtype: expected one of fp32' -- simulate --model deepseek-v3 --cluster h200x8 --tp 8 --expert-dtype fp6
expect 0 '32 redundant expert slots' -- plan --model deepseek-v3 --cluster h200x72 --workload chat-1k-1k --search exact --redundant-experts 32 --out "$tmp/r32.json"
expect 0 '"redundant_experts": 32' -- simulate --plan "$tmp/r32.json" --json
expect 0 'note: 32 redundant expert slots \(EPLB\)' -- launch --plan "$tmp/r32.json" --engine vllm
expect 2 '^shardwise: --redundant-experts: expected at most the 256 routed experts' -- plan --model deepseek-v3 --cluster h200x8 --workload chat-1k-1k --redundant-experts 300
expect 2 '^shardwise: --redundant-experts: expected 0 for a dense model' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --redundant-experts 8
# two-batch overlap: simulate, plan (refined after the search), the plan file, launch per engine
expect 0 'overlap      two-batch: two micro-batches per step' -- simulate --model deepseek-v3 --cluster h200x32 --context 2000 --batch 8192 --attn-dp 32 --ep 32 --sharding dp-mlp --tpot-ms 1000 --two-batch-overlap
expect 0 '"two_batch_overlap_applied": true' -- simulate --model deepseek-v3 --cluster h200x32 --context 2000 --batch 8192 --attn-dp 32 --ep 32 --sharding dp-mlp --tpot-ms 1000 --two-batch-overlap --json
expect 2 'two_batch_overlap needs attention data parallel and expert parallel \(attn_dp 1, ep 1' -- simulate --model deepseek-v3 --cluster h200x8 --tp 8 --two-batch-overlap
expect 2 'two_batch_overlap on a dense model' -- simulate --model llama-3.1-8b --cluster h100x8 --tp 8 --two-batch-overlap
expect 0 '^refined      two-batch overlap at tp 1 x attn_dp 32 \(ep 32\)' -- plan --model deepseek-v3 --cluster h200x32 --workload decode-16k --tpot-ms 200 --engine vllm --out "$tmp/tbo.json"
expect 0 '"two_batch_overlap": true' -- simulate --plan "$tmp/tbo.json" --json
expect 0 'note: two-batch overlap: --enable-dbo needs DeepEP' -- launch --plan "$tmp/tbo.json" --engine vllm
expect 0 '--enable-two-batch-overlap' -- launch --plan "$tmp/tbo.json" --engine sglang
expect 0 'two-batch overlap: shardwise knows no TensorRT-LLM setting' -- launch --plan "$tmp/tbo.json" --engine trtllm
printf '{"schema":"shardwise-plan/1","model":"deepseek-v3","cluster":"h100x8","degrees":{"tp":2,"attn_dp":2,"ep":4},"batch":8,"two_batch_overlap":true}' >"$tmp/tbo4.json"
expect 0 'verify: note: the plan.s two-batch overlap is a schedule' -- verify --plan "$tmp/tbo4.json" --quiet
# engine profiles (data/engines/)
expect 0 'engine       trtllm 0.9 \(max_num_tokens 8192 per attention-DP rank and pipeline micro-batch; decode attention reads KV once per query head\)' -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --workload chat-1k-1k --engine trtllm --engine-version 0.9 --max-num-tokens 8192
# offline on TensorRT-LLM without caps: trtllm-bench's (cost/bench_settings.hpp; 70.6e9 fp8 weights on 8 x 79.6 GiB, KV 2 x 80 x 8 x 128 B per token: 728 requests -> 768; tokens 1456 -> 2048)
expect 0 "^shardwise: note: offline on trtllm: trtllm-bench's caps, max_batch_size 768 and max_num_tokens 2048 per rank \(its estimate: 728 requests of 1024 \+ 1024 tokens" -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --workload chat-1k-1k --engine trtllm
expect 0 '"caps_origin": ?"trtllm-bench"' -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --workload chat-1k-1k --engine trtllm --json
expect 0 "^shardwise: note: trtllm-bench estimates 131.4 GiB of weights .* against 79.6 GiB on 1 GPU and stops: the profile's caps are kept" -- simulate --model llama-3.1-70b --cluster h100x1 --workload chat-1k-1k --engine trtllm
expect 0 'engine       vllm 0.11 \(max_num_tokens 2048 per attention-DP rank\)' -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --workload chat-1k-1k --engine vllm --max-num-tokens 2048
expect 0 '"max_num_tokens": 2048' -- simulate --model llama-3.1-70b --cluster h100x8 --tp 8 --workload chat-1k-1k --engine vllm --max-num-tokens 2048 --json
expect 0 'search +engine:sglang' -- plan --model llama-3.1-70b --cluster h100x8 --workload chat-1k-1k --search exact --engine sglang
expect 2 '^shardwise: --engine: expected one of sglang, trtllm, vllm, found .tgi.' -- simulate --model llama-3.1-70b --cluster h100x8 --engine tgi
expect 2 '^shardwise: --engine-version: expected --engine beside it' -- simulate --model llama-3.1-70b --cluster h100x8 --engine-version 1.0
expect 2 '^shardwise: --engine-version: expected a version such as 0.11, 1.0 or 0.10.2rc1' -- plan --model llama-3.1-70b --cluster h100x8 --workload chat-1k-1k --engine vllm --engine-version latest
expect 2 '^shardwise: --max-num-tokens: expected a token budget from 1 to' -- simulate --model llama-3.1-70b --cluster h100x8 --max-num-tokens 0
# MXFP4 experts with their e8m0 scale per 32: 0.53125 B each (61.61 GB at a flat 4 bits before the scales were counted)
expect 0 'weights      65.19 GB in attention bf16, dense bf16, experts fp4 \(the checkpoint.s mxfp4\)' -- describe --model gpt-oss-120b
expect 0 'weights      1.342 TB in bf16 \(1.342 TB' -- describe --model deepseek-v3 --weights-dtype bf16
expect 0 '"checkpoint_quantization": "fp8"' -- describe --model deepseek-v3 --json

# serving (issue 14): the contract's flags and JSON keys
serve=(simulate --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --mode serve --requests 200)
for key in ttft_ms tpot_ms ttft_ms_p50 ttft_ms_p90 ttft_ms_p99 tpot_ms_p50 tpot_ms_p90 tpot_ms_p99 e2e_ms_p50 e2e_ms_p99 \
           output_tok_s_per_gpu total_tok_s_per_gpu requests_per_s goodput_requests_per_s feasible reason; do
  expect 0 "\"$key\":" -- "${serve[@]}" --rate 5 --json
done
# the knee check: at 86% of the capacity, the same requests at 2% more requests/s (docs/serving.md)
expect 0 '^near the knee at 2% more requests/s: TTFT mean [0-9.]+ -> [0-9.]+ ms' -- "${serve[@]}" --rate 5
expect 0 '"rate_scale": 1.02' -- "${serve[@]}" --rate 5 --json
expect 0 '"knee": null' -- "${serve[@]}" --rate 1 --json
expect 0 'closed loop, 16 users' -- "${serve[@]}" --concurrency 16
expect 0 'bottleneck +(queueing|prefill|decode|KV cache):' -- "${serve[@]}" --concurrency 16
expect 0 'TTFT +[0-9.]+ +[0-9.]+' -- "${serve[@]}" --rate 5 --seed 9
expect 0 'INFEASIBLE +overloaded' -- "${serve[@]}" --rate 10000
expect 0 '"feasible": false' -- "${serve[@]}" --rate 10000 --json
expect 0 'offline \(every request at once\)' -- "${serve[@]}" --rate inf
expect 0 'Poisson at 6 requests/s' -- simulate --model llama-3.1-8b --cluster h100x1 --workload "$data/good/workload-serve.yaml"
expect 0 'trace .*trace.csv \(4 requests\)' -- simulate --model llama-3.1-8b --cluster h100x1 --workload "$data/good/workload-trace.yaml"
expect 2 '^shardwise: --rate: expected --mode serve' -- simulate --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --rate 5
expect 2 "^shardwise: --concurrency: expected either --rate or --concurrency" -- "${serve[@]}" --rate 5 --concurrency 4
expect 2 "^shardwise: --rate: expected a number of requests/s from 1e-6 to 1e7" -- "${serve[@]}" --rate fast
expect 2 'simulate --mode serve: expected how requests arrive' -- simulate --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --mode serve
# the same seed, the same figures
a=$("$bin" "${serve[@]}" --rate 5 --seed 4 --json | grep '"ttft_ms_p99"'); b=$("$bin" "${serve[@]}" --rate 5 --seed 4 --json | grep '"ttft_ms_p99"')
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok; else bad "serve: the same seed gave '$a' then '$b'"; fi

# plan --mode serve and --target-rate (issue 14)
splan=(plan --model llama-3.1-8b --cluster h100x4 --workload chat-1k-1k --mode serve --ttft-ms 3000 --tpot-ms 40 --search exact --requests 300)
expect 0 'chosen +#[0-9]+: .* requests/s within the SLOs' -- "${splan[@]}"
expect 0 'frontier of the chosen instance' -- "${splan[@]}"
# --search exact ran the closed form; the serving plan it joins is not a proven optimum
expect 0 '^certified +no: ' -- "${splan[@]}"
expect 0 '"certified": false' -- "${splan[@]}" --json
expect 0 'fewest GPUs +[0-9]+ for 6 requests/s' -- "${splan[@]}" --target-rate 6
# the best of each: aggregated and disaggregated (or why there is none), then the fewest GPUs
expect 0 '^aggregated +[0-9]+ GPUs?: ' -- "${splan[@]}" --target-rate 6
expect 0 '^disaggregated +([0-9]+ GPUs: [0-9]+ prefill x|none: )' -- "${splan[@]}" --target-rate 6
expect 0 'disaggregated +none: no disaggregated deployment on up to 1 GPUs' -- plan --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --mode serve --requests 300 --target-rate 1
expect 0 'disaggregated +none: no disaggregated deployment fits the cluster.s 1 GPUs; prefill 1 \+ decode 1 GPUs per instance: one of each needs 2 GPUs' -- plan --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --mode serve --requests 300
expect 0 '"requests_per_s_per_gpu":' -- "${splan[@]}" --json
expect 0 'INFEASIBLE +no plan on up to 4 GPUs serves 10000 requests/s' -- "${splan[@]}" --target-rate 10000
expect 2 '^shardwise: --target-rate: expected --mode serve' -- plan --model llama-3.1-8b --cluster h100x4 --workload chat-1k-1k --target-rate 5
expect 2 '^shardwise: --top-k: expected' -- "${splan[@]}" --top-k -1
"$bin" "${splan[@]}" --out "$tmp/serve-plan.json" >/dev/null 2>&1
expect 0 'Poisson at [0-9.]+ requests/s' -- simulate --plan "$tmp/serve-plan.json"
if grep -q '"engine_settings"' "$tmp/serve-plan.json"; then ok; else bad "plan --mode serve --out wrote no engine_settings"; fi

# disaggregated prefill/decode (issue 14)
dis=(simulate --model llama-3.1-8b --cluster h100x4 --workload chat-1k-1k --mode serve --rate 8 --requests 400 --replicas 3 --prefill-instances 1)
expect 0 'prefill pool 1 instances of tp 1' -- "${dis[@]}"
expect 0 'KV transfer +134\.2 MB per request over nvlink' -- "${dis[@]}"
expect 0 '"disaggregated": \{' -- "${dis[@]}" --json
# decode steps per scheduling decision: SGLang runs them, vLLM refuses (issue 27)
expect 0 '4 decode iterations per scheduling decision' -- simulate --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --mode serve --rate 2 --requests 100 --engine sglang --decode-steps 4
expect 2 '^shardwise: --decode-steps: expected 1 with vllm' -- simulate --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --mode serve --rate 2 --engine vllm --decode-steps 4
# closed-loop users over both pools (the decode pool's completions send the users' next requests)
expect 0 'closed loop, 12 users' -- simulate --model llama-3.1-8b --cluster h100x4 --workload chat-1k-1k --mode serve --concurrency 12 --requests 400 --replicas 3 --prefill-instances 1
expect 0 'decode pool +3 instances' -- simulate --plan "$data/good/plan-disagg.json"
expect 0 'sglang_router.launch_router' -- launch --plan "$data/good/plan-disagg.json" --engine sglang
expect 0 'disaggregation-mode prefill' -- launch --plan "$data/good/plan-disagg.json" --engine sglang
expect 0 'NixlConnector' -- launch --plan "$data/good/plan-disagg.json" --engine vllm
expect 0 'trtllm-serve disaggregated' -- launch --plan "$data/good/plan-disagg.json" --engine trtllm
expect 2 '^shardwise: --prefill-instances: expected pools that fit the cluster' -- simulate --model llama-3.1-8b --cluster h100x4 --workload chat-1k-1k --mode serve --rate 8 --replicas 4 --prefill-instances 1
expect 2 '^shardwise: --prefill-instances: expected --mode serve' -- simulate --model llama-3.1-8b --cluster h100x4 --workload chat-1k-1k --prefill-instances 1
expect 0 'disaggregated on the same 4 GPUs' -- "${splan[@]}"

# plan --engine searches only what the engine runs (issue 15): its launch is the plan itself
"$bin" plan --model llama-3.1-405b --cluster h100x16 --workload chat-1k-1k --weights-dtype fp8 --engine vllm --out "$tmp/vllm-plan.json" >/dev/null 2>&1
expect 0 'vllm runs this plan as it is' -- launch --plan "$tmp/vllm-plan.json" --engine vllm
expect 0 'search +engine:sglang' -- plan --model qwen3-30b-a3b --cluster h100x8 --workload chat-1k-1k --engine sglang

# rough edges (issue 15): idle GPUs, the binding constraint, "1 GPU", fp4 on Hopper
expect 0 '= 16 GPUs of 24 \(8 idle\)' -- plan --model deepseek-v3 --cluster h200x24 --workload chat-1k-1k --search exact
expect 0 'bound by +the TPOT SLO: at batch [0-9]+' -- plan --model deepseek-v3 --cluster h200x24 --workload chat-1k-1k --search exact
expect 0 'deployment +[0-9.]+ output tokens/s on 16 of the cluster.s 24 GPUs' -- plan --model deepseek-v3 --cluster h200x24 --workload chat-1k-1k --search exact
expect 0 '= 1 GPU of 1$' -- simulate --model llama-3.1-8b --cluster h100x1 --batch 4
expect 0 'note +h100 has no fp4 tensor cores' -- simulate --model llama-3.1-8b --cluster h100x1 --batch 4 --weights-dtype fp4

# sweep (issue 15): a table with prices and the fewest GPUs, CSV and SVG files
expect 0 'h100 +4 auto +generic .* \*$' -- sweep --model llama-3.1-70b --gpus h100,a100 --counts 4,8,16
expect 0 'a100 +2 auto +generic +no plan' -- sweep --model llama-3.1-70b --gpus h100,a100 --counts 2,4
"$bin" sweep --model llama-3.1-8b --gpus h100,b200 --counts 1,2 --csv "$tmp/sweep.csv" --svg "$tmp/sweep.svg" >/dev/null 2>&1
if [ "$(wc -l <"$tmp/sweep.csv")" = 5 ] && grep -q '<svg' "$tmp/sweep.svg"; then ok; else bad "sweep --csv/--svg: $(head -c 200 "$tmp/sweep.csv")"; fi
expect 0 '"usd_per_mtok":' -- sweep --model llama-3.1-8b --gpus h100 --counts 1 --json
expect 2 '^shardwise: --gpus: expected GPU types from' -- sweep --model llama-3.1-8b --gpus h100,tpu --counts 8

# launch: a published FP8 checkpoint instead of --quantization fp8; SGLang's static fraction leaves room for activations and CUDA graphs
"$bin" plan --model llama-3.1-405b --cluster h100x16 --workload chat-1k-1k --weights-dtype fp8 --engine sglang --out "$tmp/p405.json" >/dev/null 2>&1
expect 0 'model-path meta-llama/Llama-3.1-405B-Instruct-FP8' -- launch --plan "$tmp/p405.json" --engine sglang
expect 0 'mem-fraction-static 0\.(8|9)[0-9]' -- launch --plan "$tmp/p405.json" --engine sglang
if "$bin" launch --plan "$tmp/p405.json" --engine sglang | grep -q -- '--quantization'; then bad "launch quantised a bf16 repo beside a published FP8 checkpoint"; else ok; fi

# launch quotes every user string for the shell (issue 30): each emitted command, run with
# its programs replaced by a printer, yields the hostile value as one word and runs nothing
hostile_path='x; touch PWNED $(touch PWNED2) `touch PWNED3` '"'"'q'"'"
hostile_head='10.0.0.1; rm -rf ~'
for engine in vllm sglang trtllm; do
  for plan in "$tmp/ds.json" "$data/good/plan-disagg.json"; do
    "$bin" launch --plan "$plan" --engine "$engine" --model-path "$hostile_path" --head-address "$hostile_head" >"$tmp/launch.sh" 2>&1 || {
      bad "launch $engine $plan with hostile strings exited $?"; continue; }
    ( cd "$tmp" && rm -f PWNED PWNED2 PWNED3 &&
      for cmd in vllm python3 trtllm-serve mpirun ray; do eval "$cmd() { printf '%s\n' \"\$@\" >>words.txt; }"; done &&
      : >words.txt && source ./launch.sh >/dev/null 2>&1 )
    if [ -e "$tmp/PWNED" ] || [ -e "$tmp/PWNED2" ] || [ -e "$tmp/PWNED3" ]; then bad "launch $engine: a model path ran as a command"; continue; fi
    if grep -qxF -- "$hostile_path" "$tmp/words.txt" || ! grep -q 'model-path\|serve' "$tmp/launch.sh"; then ok; else
      bad "launch $engine $plan: the model path is not one word: $(grep -m2 -F 'PWNED' "$tmp/launch.sh")"; fi
  done
done
expect 2 "^shardwise: --head-address: expected a value without control characters" -- launch --plan "$tmp/ds.json" --engine vllm --head-address $'10.0.0.1\nrm -rf ~'
expect 2 "models: expected a model folder with a config.json" -- launch --plan "$tmp/ds.json" --engine vllm --model-path "$shared/models"
mkdir -p "$tmp/qwen8" && cp "$shared/models/qwen3-8b.json" "$tmp/qwen8/config.json" 2>/dev/null &&
  expect 2 "^shardwise: --model-path: expected a checkpoint of the plan's model deepseek-v3" -- launch --plan "$tmp/ds.json" --engine vllm --model-path "$tmp/qwen8"
# a local folder named like a preset is read in its place, and says so (an empty one is refused with the reason)
mkdir -p "$tmp/shadow/llama-3.1-8b" && pushd "$tmp/shadow" >/dev/null
expect 2 "no config.json in it \(this local folder shadows the preset of the same name" -- describe --model llama-3.1-8b
cp "$shared/models/qwen3-8b.json" llama-3.1-8b/config.json
expect 0 "^shardwise: note: --model llama-3.1-8b: the local folder 'llama-3.1-8b' is read, not the preset" -- describe --model llama-3.1-8b
popd >/dev/null

# launch starts what was simulated (issue 27): a pre-quantised checkpoint gets no --quantization,
# SGLang's chunked prefill is per DP rank times the DP size, TensorRT-LLM chunks its prefills,
# co-located disaggregated instances get their own side ports
mkdir -p "$tmp/l8fp8" && cp "$shared/models/llama-3.1-8b.json" "$tmp/l8fp8/config.json" &&
  printf '{"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": null}}\n' >"$tmp/l8fp8/hf_quant_config.json"
"$bin" plan --model "$tmp/l8fp8" --cluster h100x8 --workload chat-1k-1k --budget 20 --out "$tmp/q8.json" >/dev/null 2>&1
expect 0 'note: the checkpoint is already quantised \(modelopt:FP8\)' -- launch --plan "$tmp/q8.json" --engine vllm
if "$bin" launch --plan "$tmp/q8.json" --engine sglang | grep -qE -- '^ +--quantization'; then bad "launch quantised a ModelOpt FP8 checkpoint again"; else ok; fi
"$bin" plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --weights-dtype fp8 --budget 20 --out "$tmp/b8.json" >/dev/null 2>&1
mkdir -p "$tmp/l8" && cp "$shared/models/llama-3.1-8b.json" "$tmp/l8/config.json"
expect 0 '^ +--quantization fp8' -- launch --plan "$tmp/b8.json" --engine vllm --model-path "$tmp/l8"
if "$bin" launch --plan "$tmp/b8.json" --engine vllm --model-path "$tmp/l8fp8" | grep -qE -- '^ +--quantization'; then bad "launch quantised a --model-path FP8 checkpoint again"; else ok; fi
expect 0 '^enable_chunked_prefill: true' -- launch --plan "$data/good/plan-disagg.json" --engine trtllm
expect 0 "--prefill 'http://<PREFILL_0_HOST>:30001' 8998" -- launch --plan "$data/good/plan-disagg.json" --engine sglang
expect 0 'CUDA_VISIBLE_DEVICES=2 VLLM_NIXL_SIDE_CHANNEL_PORT=5602 vllm serve' -- launch --plan "$data/good/plan-disagg.json" --engine vllm

# plan.json records the engine it was made for; simulate --plan and launch replay it (issue 27)
"$bin" plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --engine sglang --budget 20 --out "$tmp/eng.json" >/dev/null 2>&1
if python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['engine']; sys.exit(0 if e=={'name':'sglang','version':'0.5'} else 1)" "$tmp/eng.json"; then ok; else bad "plan --engine sglang did not record the engine: $(head -c 300 "$tmp/eng.json")"; fi
expect 0 '^engine +sglang 0.5' -- simulate --plan "$tmp/eng.json"
expect 0 'python3 -m sglang.launch_server' -- launch --plan "$tmp/eng.json"
expect 0 "note: .*eng.json was made for sglang; launching it on vllm" -- launch --plan "$tmp/eng.json" --engine vllm
expect 2 "^shardwise: --engine: expected vllm, sglang or trtllm \(the plan records no engine" -- launch --plan "$tmp/b8.json"
sed 's/"name": "sglang"/"name": "tgi"/' "$tmp/eng.json" >"$tmp/eng-bad.json"
expect 2 "eng-bad.json: field 'engine.name': expected one of sglang, trtllm, vllm, found 'tgi'" -- simulate --plan "$tmp/eng-bad.json"
expect 2 "eng-bad.json: field 'engine.name': expected one of vllm, sglang, trtllm, found 'tgi'" -- launch --plan "$tmp/eng-bad.json"

# simulate --explain (issue 26): per op its bound and basis, the share resting on measured rows
expect 0 'rests on measured or transferred rows' -- simulate --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --tp 1 --batch 8 --explain
expect 0 'memory +measured +data/silicon/gemm.csv: h100 bf16 GEMMs' -- simulate --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --tp 1 --batch 8 --explain --kernel-tables
expect 0 '"measured_share": 0\.[1-9]' -- simulate --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --tp 1 --batch 8 --explain --kernel-tables --json
expect 0 'x0.640 \(bf16\)' -- simulate --model llama-3.1-8b --cluster mi300xx8 --workload chat-1k-1k --tp 1 --batch 8 --explain
# the measured decode layer's kernel floor (vLLM, SGLang): 6.67 us per op for DeepSeek-V3 on the H200
# (tests/cost/layer_floor_test.cpp has the arithmetic); TensorRT-LLM keeps the fitted one and prints no line
expect 0 'kernel floor 6\.67 us per priced op \(sglang runs its small kernels separately\).*not the fitted 8\.00 us' -- simulate --model deepseek-v3 --cluster h200x8 --tp 8 --batch 8 --mode decode --engine sglang --explain
expect 0 '"kernel_floor": \{' -- simulate --model deepseek-v3 --cluster h200x8 --tp 8 --batch 8 --mode decode --engine vllm --explain --json
if "$bin" simulate --model deepseek-v3 --cluster h200x8 --tp 8 --batch 8 --mode decode --engine trtllm --explain 2>&1 | grep -q 'kernel floor'; then
  bad "simulate --engine trtllm --explain printed a measured kernel floor"
else
  ok
fi
expect 2 '^shardwise: --explain: expected a closed-form mode' -- simulate --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --tp 1 --mode serve --rate 2 --explain
# --silicon DIR (issue 26): one's own measurements beside the built-in tables, on simulate, plan and sweep
mkdir -p "$tmp/sil" "$tmp/sil-empty" "$tmp/sil-bad"
printf 'silicon,dtype,kernel,layout,groups,m_per_group,m_padded,N,K,value,unit,source_locator\nh100,bf16,mine,contiguous,32,1,8,4096,7168,700,us,my lab\nh100,bf16,mine,contiguous,32,16,16,4096,7168,720,us,my lab\n' >"$tmp/sil/grouped_gemm.csv"
expect 0 "expert_ffn1 .* measured +$tmp/sil/grouped_gemm.csv: h100 bf16 grouped GEMMs \\(mine x2; 1-16 rows per expert" -- simulate --model qwen3-30b-a3b --cluster h100x8 --workload chat-1k-1k --tp 1 --batch 8 --explain --silicon "$tmp/sil"
expect 0 'expert_ffn1 .* measured +data/silicon/grouped_gemm.csv: h100 bf16 grouped GEMMs' -- simulate --model qwen3-30b-a3b --cluster h100x8 --workload chat-1k-1k --tp 1 --batch 8 --explain --kernel-tables
# TensorRT-LLM's attention-DP balancing: trtllm only, WAIT,TIMEOUT checked, printed, recorded in plan.json and written by launch
expect 2 "^shardwise: --adp-balance: expected --engine trtllm beside it" -- simulate --model deepseek-v3 --cluster b200x8 --attn-dp 8 --ep 8 --engine sglang --workload chat-1k-1k --mode serve --rate 5 --adp-balance 3,9
expect 2 "^shardwise: --adp-balance: expected WAIT,TIMEOUT: two whole numbers of iterations .*, found '3x9'" -- simulate --model deepseek-v3 --cluster b200x8 --attn-dp 8 --ep 8 --engine trtllm --workload chat-1k-1k --mode serve --rate 5 --adp-balance 3x9
expect 0 'attention-DP balancing: new prompts wait for every DP rank to have one \(3 more iterations while all decode\), or for 9 iterations without' -- simulate --model deepseek-v3 --cluster b200x8 --attn-dp 8 --ep 8 --engine trtllm --workload chat-1k-1k --mode serve --rate 5 --requests 200 --adp-balance 3,9
expect 0 '"timeout_iters": 9' -- simulate --model deepseek-v3 --cluster b200x8 --attn-dp 8 --ep 8 --engine trtllm --workload chat-1k-1k --mode serve --rate 5 --requests 200 --adp-balance 3,9 --json
# where the balancing cannot hold anything, a note says so (the run is as without it)
expect 0 '^shardwise: note: --adp-balance has no effect in offline mode' -- simulate --model qwen3-30b-a3b --cluster h100x1 --engine trtllm --adp-balance 3,9 --mode offline --isl 100 --osl 100
expect 0 '^shardwise: note: --adp-balance has no effect: each instance has one attention-DP rank' -- simulate --model qwen3-30b-a3b --cluster h100x1 --engine trtllm --adp-balance 3,9 --mode serve --isl 100 --osl 100 --rate 5 --requests 50
expect 0 ' met' -- plan --model deepseek-v3 --cluster b200x8 --engine trtllm --workload chat-1k-1k --mode serve --requests 200 --adp-balance 3,9 --out "$tmp/adp-plan.json"
expect 0 'attention-DP balancing: new prompts wait .*or for 9 iterations without' -- simulate --plan "$tmp/adp-plan.json" --rate 5 --requests 200
expect 0 'attention_dp_config:' -- launch --plan "$tmp/adp-plan.json"
# CUDA-graph batch padding (docs/serving.md, "CUDA-graph batch padding"): the flag, the plan file, the launch of each engine
expect 2 "^shardwise: --cuda-graph-batch-sizes: expected a comma-separated list of whole batch sizes, e.g. 128,256,384,512, found '128;256'" -- simulate --model llama-3.1-8b --cluster h100x1 --mode decode --batch 100 --cuda-graph-batch-sizes '128;256'
expect 2 "^shardwise: --cuda-graph-batch-sizes: expected 1 to 256 batch sizes from 1 to 65536, found '0,8'" -- simulate --model llama-3.1-8b --cluster h100x1 --mode decode --batch 100 --cuda-graph-batch-sizes 0,8
expect 0 'decode-only steps padded to CUDA-graph batch sizes 128,256' -- simulate --model llama-3.1-8b --cluster h100x1 --mode decode --batch 100 --cuda-graph-batch-sizes 256,128
expect 0 'cuda graphs  the decode step of 100 sequences runs padded to 128' -- simulate --model llama-3.1-8b --cluster h100x1 --mode decode --batch 100 --cuda-graph-batch-sizes 256,128
# the exact search prices decode mode's padded step as the simulator does (it checks the two agree)
expect 0 'chosen plan' -- plan --model llama-3.1-8b --cluster h100x8 --workload decode-16k --batch 100 --context 1024 --cuda-graph-batch-sizes 128,256
expect 0 '"graph_padded_batch": 128' -- simulate --model llama-3.1-8b --cluster h100x1 --mode decode --batch 100 --cuda-graph-batch-sizes 256,128 --json
expect 0 'CUDA graphs: a decode-only iteration runs padded up to the next of 64,128 sequences' -- simulate --model llama-3.1-8b --cluster h100x1 --engine vllm --workload chat-1k-1k --mode serve --rate 5 --requests 100 --cuda-graph-batch-sizes 64,128
expect 0 '"cuda_graph_batch_sizes": \[' -- simulate --model llama-3.1-8b --cluster h100x1 --engine vllm --workload chat-1k-1k --mode serve --rate 5 --requests 100 --cuda-graph-batch-sizes 64,128 --json
expect 0 ' met' -- plan --model llama-3.1-8b --cluster h100x8 --engine vllm --workload chat-1k-1k --mode serve --requests 200 --cuda-graph-batch-sizes 8,16,32,64 --out "$tmp/graph-plan.json"
expect 0 'CUDA graphs: a decode-only iteration runs padded up to the next of 8,16,32,64 sequences' -- simulate --plan "$tmp/graph-plan.json" --rate 5 --requests 100
expect 0 "--compilation-config '\\{\"cudagraph_capture_sizes\":\\[8,16,32,64\\]\\}'" -- launch --plan "$tmp/graph-plan.json" --engine vllm
expect 0 '--cuda-graph-bs 8 16 32 64' -- launch --plan "$tmp/graph-plan.json" --engine sglang
expect 0 'batch_sizes: \[8, 16, 32, 64\]' -- launch --plan "$tmp/graph-plan.json" --engine trtllm
# vLLM's own capture ladder where none are given (1, 2, 4, every 8 to 512: 67 sizes): the serve report names it,
# the JSON lists it and decode pads 157 to 160; a plan made without sizes launches none (vLLM applies its own)
expect 0 "CUDA graphs: the engine's default capture sizes \\(1 to 512, 67 of them\\)" -- simulate --model llama-3.1-8b --cluster h100x1 --engine vllm --workload chat-1k-1k --mode serve --rate 5 --requests 100
expect 0 '"default_cuda_graph_batch_sizes": \[' -- simulate --model llama-3.1-8b --cluster h100x1 --engine vllm --mode decode --batch 157 --context 1000 --json
expect 0 '"graph_padded_batch": 160,?$' -- simulate --model llama-3.1-8b --cluster h100x1 --engine vllm --mode decode --batch 157 --context 1000 --json
expect 0 ' met' -- plan --model llama-3.1-8b --cluster h100x8 --engine vllm --workload chat-1k-1k --mode serve --requests 200 --out "$tmp/ladder-plan.json"
launched=$("$bin" launch --plan "$tmp/ladder-plan.json" --engine vllm 2>&1); launch_rc=$?
if [ "$launch_rc" != 0 ] || ! grep -q 'vllm serve' <<<"$launched"; then
  bad "launch of a plan without CUDA-graph sizes failed ($launch_rc): ${launched:0:300}"
elif grep -q cuda_graph "$tmp/ladder-plan.json" || grep -qiE 'cudagraph|cuda-graph|cuda_graph' <<<"$launched"; then
  bad "a plan made without CUDA-graph sizes carries some (the engine's defaults must stay the engine's)"
else
  ok
fi
expect 0 "GEMM few-row ramp carried to mi300x's ridge .*x0\\.53[0-9] \\(bf16\\)" -- simulate --model llama-2-70b --cluster mi300xx1 --mode decode --batch 64 --context 370 --tpot-ms 1e6 --explain
# the engines' dispatch and combine kernels: DeepEP's low-latency rows under SGLang with two-batch overlap in decode, the model under the generic engine
expect 0 'moe:combine .* network +(transferred|extrapolated) +data/silicon/moe_comm.csv: h800 deepep_ll' -- simulate --model deepseek-v3 --cluster h200x8 --attn-dp 8 --ep 8 --engine sglang --two-batch-overlap --mode decode --context 2000 --batch 512 --explain --kernel-tables
expect 0 'moe:combine .* network +model +-' -- simulate --model deepseek-v3 --cluster h200x8 --attn-dp 8 --ep 8 --mode decode --context 2000 --batch 512 --explain --kernel-tables
# a folder as measure.py writes it: its attention.csv's decode rows price a GQA model's decode attention on
# that GPU (an MLA model's keeps its own path); a bad row is refused naming the file, row, column and value
mkdir -p "$tmp/sil-measured" "$tmp/sil-badattn"
cp "$tmp/sil/grouped_gemm.csv" "$tmp/sil-measured/"
printf 'silicon,dtype,kernel,phase,batch,q_heads,kv_heads,head_dim,q_len,kv_len,causal,value,unit,source_locator\nh100,bf16,FlashInfer paged decode,decode,1,32,8,128,1,512,0,9.1,us,my lab\nh100,bf16,torch SDPA (flash_attention),decode,8,32,8,128,1,512,0,11.6,us,my lab\n' >"$tmp/sil-measured/attention.csv"
expect 0 'throughput' -- simulate --model deepseek-v3 --cluster h100x8 --tp 8 --mode decode --batch 8 --silicon "$tmp/sil-measured"
expect 0 "dense:attention .* latency +measured +$tmp/sil-measured/attention.csv: h100 decode attention \\(1 rows" -- simulate --model llama-3.1-8b --cluster h100x1 --mode decode --batch 4 --context 64 --explain --silicon "$tmp/sil-measured"
expect 0 'dense:attention .* memory +measured +data/silicon/attention.csv: b200 decode attention' -- simulate --model llama-3.1-8b --cluster b200x1 --mode decode --batch 128 --context 2048 --explain
printf 'silicon,dtype,kernel,phase,batch,q_heads,kv_heads,head_dim,q_len,kv_len,causal,value,unit,source_locator\nh100,int4,sdpa,decode,1,32,8,128,1,512,0,9.1,us,my lab\n' >"$tmp/sil-badattn/attention.csv"
expect 2 "^shardwise: $tmp/sil-badattn/attention.csv: field 'row 2 dtype': expected bf16, fp16 or fp8 \\(the KV cache's format\\), found 'int4'" -- simulate --model llama-3.1-8b --cluster h100x1 --silicon "$tmp/sil-badattn"
expect 2 "^shardwise: --silicon: expected a folder of kernel tables \\(bench/silicon/measure.py --out\\), found '$tmp/nope'" -- simulate --model llama-3.1-8b --cluster h100x8 --silicon "$tmp/nope"
expect 2 "^shardwise: --silicon: expected a folder holding gemm.csv, grouped_gemm.csv, fused_moe.csv, gemm_ceiling.csv, allreduce.csv, elementwise.csv, mla_decode.csv, attention.csv, attention_prefill.csv or moe_comm.csv" -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --silicon "$tmp/sil-empty"
printf 'silicon,dtype,kernel,M,N,K,value,unit,source_locator\nh100,bf16,k,1,2,3,-4,us,x\n' >"$tmp/sil-bad/gemm.csv"
expect 2 "^shardwise: $tmp/sil-bad/gemm.csv: field 'row 2 value': expected a positive number, found '-4'" -- sweep --model llama-3.1-8b --gpus h100 --counts 1 --silicon "$tmp/sil-bad"
expect 0 'tok/s/GPU' -- sweep --model llama-3.1-8b --gpus h100 --counts 1 --silicon "$tmp/sil"
# a plan made with --silicon records it (plan.json "cost"); simulate --plan replays it unless cost flags are given,
# and a recorded folder that no longer reads names the plan file's field
expect 0 'chosen' -- plan --model qwen3-30b-a3b --cluster h100x8 --workload chat-1k-1k --search megatron --silicon "$tmp/sil" --out "$tmp/cost-plan.json"
expect 0 '"silicon": ' -- plan --model qwen3-30b-a3b --cluster h100x8 --workload chat-1k-1k --search megatron --silicon "$tmp/sil" --json
expect 0 "expert_ffn1 .* (measured|extrapolated) +$tmp/sil/grouped_gemm.csv" -- simulate --plan "$tmp/cost-plan.json" --explain
expect 0 'expert_ffn1 .* data/silicon/grouped_gemm.csv' -- simulate --plan "$tmp/cost-plan.json" --explain --kernel-tables
sed "s|$tmp/sil|$tmp/gone|" "$tmp/cost-plan.json" >"$tmp/cost-gone.json"
expect 2 "^shardwise: $tmp/cost-gone.json: field 'cost.silicon': expected a folder of kernel tables" -- simulate --plan "$tmp/cost-gone.json"
expect 2 "^shardwise: $tmp/cost-gone.json: field 'cost.silicon'" -- launch --plan "$tmp/cost-gone.json" --engine vllm

# bounds and flags that would be ignored (issue 30)
expect 2 "^shardwise: --rate: expected a number of requests/s from 1e-6 to 1e7" -- simulate --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --tp 1 --mode serve --rate 1e-300
expect 2 "^shardwise: --spec-acceptance: expected --spec-tokens" -- simulate --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --tp 1 --spec-acceptance 0.8

expect 2 "^shardwise: --gpus: expected each value once, found 'h100' twice" -- sweep --model llama-3.1-8b --gpus h100,b200,h100 --counts 8
expect 2 "^shardwise: --counts: expected each value once, found '8' twice" -- sweep --model llama-3.1-8b --gpus h100 --counts 8,16,8
expect 2 "^shardwise: --gpus/--counts/--dtypes/--engines: expected at most 1000 points \\(each a whole search\\), found 1 x 1001" -- sweep --model llama-3.1-8b --gpus h100 --counts "$(seq -s, 1 1001)"

# output files (issue 30): a failed write is exit 2 naming the path, never 0; the old file
# survives a failed write whole; two flags naming one file are refused
if [ -w /dev/full ]; then
  expect 2 "^shardwise: /dev/full: expected a writable file for --out" -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --out /dev/full
  expect 2 "^shardwise: /dev/full: expected a writable file for --csv" -- sweep --model llama-3.1-8b --gpus h100 --counts 8 --csv /dev/full
  "$bin" simulate --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --tp 1 --json >/dev/full 2>"$tmp/err"; rc=$?
  if [ "$rc" = 2 ] && grep -q '^shardwise: standard output: expected a writable stream' "$tmp/err"; then ok; else bad "simulate >/dev/full exited $rc: $(cat "$tmp/err")"; fi
fi
printf 'the old plan\n' >"$tmp/keep.json"
( ulimit -f 1; exec "$bin" plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --report "$tmp/keep.json" ) >/dev/null 2>"$tmp/err"; rc=$?
if [ "$rc" -ne 0 ] && [ "$(cat "$tmp/keep.json")" = "the old plan" ] && [ -z "$(ls -A "$tmp" | grep '^\.keep\.json\.')" ]; then ok; else
  bad "a size-limited --report exited $rc and left: $(head -c 80 "$tmp/keep.json"); $(ls -A "$tmp" | grep keep)"; fi
expect 2 "^shardwise: --svg: expected a file other than --csv's" -- sweep --model llama-3.1-8b --gpus h100 --counts 8 --csv "$tmp/same" --svg "$tmp/./same"
expect 2 "^shardwise: --report: expected a file other than --out's" -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --out "$tmp/p.json" --report "$tmp/p.json"
# a policy may be loaded from and saved to one file (read first, then replaced whole)
"$bin" plan --model llama-3.1-8b --cluster h100x8 --workload decode-16k --search rl-paper --budget 5 --save-policy "$tmp/pol.json" >/dev/null 2>&1
expect 0 'plan' -- plan --model llama-3.1-8b --cluster h100x8 --workload decode-16k --search rl-paper --budget 5 --load-policy "$tmp/pol.json" --save-policy "$tmp/pol.json"
mkfifo "$tmp/fifo.yaml" && expect 2 "fifo.yaml: expected a regular file, found a FIFO" -- describe --workload "$tmp/fifo.yaml"

# issue 30: bad input is exit 2 (never an INFEASIBLE result), flags that do not apply are refused
SV="--model llama-3.1-8b --cluster h100x8 --mode serve --isl 1000 --osl 200"
expect 0 'closed loop, 15 users' -- simulate $SV --concurrency 15 --requests 200 --prefill-instances 1  # the pools route users themselves: no even split
expect 2 '^shardwise: --concurrency: expected a number of users that splits evenly over the 2 replicas .*, found 3' -- simulate $SV --concurrency 3 --replicas 2
expect 2 "^shardwise: --seed: expected an integer from 0 to 4611686018427387904 \(2\^62\), found '18446744073709551615'" -- simulate $SV --rate 5 --seed 18446744073709551615
expect 2 "^shardwise: --seed: expected an integer from 0 to 4611686018427387904 \(2\^62\), found '-1'" -- simulate $SV --rate 5 --seed=-1
expect 0 '"seed": 4611686018427387904' -- simulate $SV --rate 5 --requests 20 --seed 4611686018427387904 --json
expect 2 '^shardwise: --max-num-seqs: expected --mode serve, or --engine .* found 4 with mode decode and no --engine' -- simulate $M8 --max-num-seqs 4
expect 2 '^shardwise: --max-num-seqs: expected .* found 4 with mode prefill$' -- simulate $M8 --mode prefill --isl 128 --engine vllm --max-num-seqs 4
# a named engine's running-sequence cap bounds --batch max outside serve (here the one given)
expect 0 "batch 2048 \\(trtllm's cap of 2048 running sequences per attention-DP rank" -- simulate --model llama-3.1-8b --cluster b200x1 --mode offline --isl 871 --osl 129 --weights-dtype fp4 --kv-dtype fp8 --engine trtllm --max-num-seqs 2048 --batch max --tpot-ms 100000 --ttft-ms 1000000
expect 0 '"batch_at_engine_cap": ?true' -- simulate --model llama-3.1-8b --cluster b200x1 --mode offline --isl 871 --osl 129 --engine vllm --max-num-seqs 16 --batch max --json
expect 2 "^shardwise: --batch 3000: expected a plan valid on .*found batch 3000 is over trtllm's cap of 1280 running sequences per attention-DP rank x 1 \\(--max-num-seqs 3000 raises it\\)" -- simulate --model llama-3.1-8b --cluster b200x1 --mode offline --isl 871 --osl 129 --engine trtllm --batch 3000
expect 0 'batch 3000' -- simulate --model llama-3.1-8b --cluster b200x1 --mode offline --isl 871 --osl 129 --engine trtllm --batch 3000 --max-num-seqs 3000
expect 0 "^why          every plan evaluated broke a rule .*batch 3000 is over trtllm's cap" -- plan --model llama-3.1-8b --cluster b200x1 --workload chat-1k-1k --mode offline --isl 300 --osl 100 --engine trtllm --batch 3000 --budget 50
expect 0 'workload     chat-1k-1k [(]offline[)], batch 3000' -- plan --model llama-3.1-8b --cluster b200x1 --workload chat-1k-1k --mode offline --isl 300 --osl 100 --weights-dtype fp4 --kv-dtype fp8 --engine trtllm --batch 3000 --max-num-seqs 3000 --tpot-ms 100000 --ttft-ms 1000000 --budget 50
expect 2 '^shardwise: --max-num-seqs: expected --mode serve, or --engine .* found 4 with mode offline and no --engine' -- plan --model llama-3.1-8b --cluster b200x1 --workload chat-1k-1k --mode offline --isl 300 --osl 100 --max-num-seqs 4 --budget 5
expect 0 '^shardwise: note: --adp-balance has no effect in offline mode' -- plan --model qwen3-30b-a3b --cluster h100x2 --workload chat-1k-1k --engine trtllm --adp-balance 3,9 --mode offline --isl 100 --osl 100 --budget 20
expect 0 "^bound by     trtllm's cap of 2048 running sequences per attention-DP rank" -- plan --model llama-3.1-8b --cluster b200x1 --workload chat-1k-1k --weights-dtype fp4 --kv-dtype fp8 --engine trtllm --isl 871 --osl 129 --tpot-ms 100000 --ttft-ms 1000000 --budget 200
# a plan made without the engine past its default cap launches as simulated, the cap raised, with a note (plan = launch)
expect 0 'batch 2688' -- plan --model llama-3.1-8b --cluster b200x1 --workload chat-1k-1k --weights-dtype fp4 --kv-dtype fp8 --isl 871 --osl 129 --tpot-ms 100000 --ttft-ms 1000000 --budget 200 --out "$tmp/p8.json"
expect 0 '^    --max_batch_size 2688 ' -- launch --plan "$tmp/p8.json" --engine trtllm
expect 0 "^# note: the plan runs 2688 sequences per attention-DP rank, over trtllm's default of 2048: the commands raise the cap" -- launch --plan "$tmp/p8.json" --engine trtllm
expect 0 "^shardwise: note: .*p8.json runs 2688 sequences per attention-DP rank, over trtllm's default of 2048: simulated with the cap raised" -- simulate --plan "$tmp/p8.json" --engine trtllm
expect 2 '^shardwise: --max-num-seqs: expected --mode serve, or --engine' -- plan $M8 --workload chat-1k-1k --budget 5 --max-num-seqs 4
expect 2 '^shardwise: --time-limit: expected --mode serve beside it' -- simulate $M8 --time-limit 5
expect 2 "^shardwise: --engine: expected one of sglang, trtllm, vllm, found '' \(an empty name\)" -- simulate $M8 --engine ''
expect 2 "^shardwise: --engine-version: expected a version such as .*, found '0.11junk'" -- simulate $M8 --engine vllm --engine-version 0.11junk
expect 2 "^shardwise: --engine-version: expected a version such as .*, found '1e9'" -- simulate $M8 --engine vllm --engine-version 1e9
expect 0 '^shardwise: note: vllm 999 is newer than the vllm profile describes \(0.11\)' -- simulate $M8 --engine vllm --engine-version 999
expect 0 'throughput' -- simulate $M8 --engine vllm --engine-version 0.10.2rc1
expect 2 "^shardwise: --rate: expected no arrivals for plan --mode serve" -- plan $SV --workload chat-1k-1k --rate 5
expect 2 "^shardwise: --concurrency: expected no arrivals for plan --mode serve" -- plan $SV --workload chat-1k-1k --concurrency 5
expect 2 "^shardwise: --compare: expected no --compare with --mode serve" -- plan $SV --workload chat-1k-1k --compare rw
expect 2 "field 'arrivals.pattern': expected no trace for plan --mode serve" -- plan $M8 --workload "$data/good/workload-trace.yaml"
expect 2 "^shardwise: --rate: expected no arrivals for a serving sweep" -- sweep --model llama-3.1-8b --gpus h100 --counts 8 --mode serve --isl 100 --osl 10 --rate 5
expect 2 "^shardwise: --requests: expected --mode serve \\(or a serve workload\\) beside it, found mode offline" -- sweep --model llama-3.1-8b --gpus h100 --counts 8 --requests 100
expect 2 "^shardwise: --target-rate: expected --mode serve \(or a serve workload\) beside it, found mode offline" -- sweep --model llama-3.1-8b --gpus h100 --counts 8 --target-rate 5
# engines and GPUs that cannot meet (issue 28): exit 2 on plan, simulate, launch; skipped with the reason in a sweep
expect 2 "^shardwise: --engine: expected an engine built for the GPU \(mi300x\), found 'trtllm': trtllm is built for NVIDIA GPUs only \(for AMD GPUs: vllm, sglang\)" -- plan --model llama-3.1-8b --cluster mi300xx8 --workload chat-1k-1k --engine trtllm
expect 2 "^shardwise: --engine: expected an engine built for the GPU \(mi300x\)" -- simulate --model llama-3.1-8b --cluster mi300xx8 --workload chat-1k-1k --engine trtllm
expect 0 "^skipped      trtllm on mi300x \(1 GPUs\): trtllm is built for NVIDIA GPUs only" -- sweep --model llama-3.1-8b --gpus mi300x,h100 --counts 1 --engines trtllm
expect 0 "^price '-'     no price for mi300x in the price table" -- sweep --model llama-3.1-8b --gpus mi300x --counts 1
# a serving sweep (issues 27, 28): serve mode per point, figures at the SLOs' percentiles, a target rate
expect 0 'h100 +1 auto +generic +tp1 .* 3.000 .* \*$' -- sweep --model llama-3.1-8b --gpus h100 --counts 1,2 --mode serve --slo "ttft:p99<=2000,tpot:p90<=50" --requests 200 --top-k 3 --target-rate 3
expect 0 '"requests_per_s":' -- sweep --model llama-3.1-8b --gpus h100 --counts 1 --mode serve --tpot-ms 50 --requests 200 --top-k 3 --json
expect 2 "^shardwise: --rate: expected no --rate with a trace workload" -- simulate $M8 --workload "$data/good/workload-trace.yaml" --rate 3
expect 2 "^shardwise: --isl: expected no --isl with a trace workload" -- simulate $M8 --workload "$data/good/workload-trace.yaml" --isl 3
expect 2 "^shardwise: --requests: expected at most the trace's 4 requests" -- simulate $M8 --workload "$data/good/workload-trace.yaml" --requests 5
expect 0 "verdict" -- simulate $M8 --workload "$data/good/workload-trace.yaml" --requests 3
# a long run stops at its time limit and says so (no statistics of a partial run)
expect 0 '^STOPPED +by the time limit \(1 s\) after' -- simulate $SV --rate 50 --requests 3000000 --time-limit 1
expect 0 '"stopped": true' -- simulate $SV --rate 50 --requests 3000000 --time-limit 1 --json
expect 0 'not planned: the sweep was stopped by the time limit' -- sweep --model llama-3.1-8b --gpus h100,h200 --counts 8,16 --time-limit 0.001
expect 2 '^shardwise: --time-limit: expected a number of seconds from 0' -- sweep --model llama-3.1-8b --gpus h100 --counts 8 --time-limit -1
# verify starts its own mpirun: inside an MPI job it says so
OMPI_COMM_WORLD_SIZE=1 expect 2 '^shardwise: verify: expected to be run directly' -- verify --model llama-3.1-8b --tp 2

# check and calibrate (docs/check.md, docs/calibration.md): a vLLM --save-result file of a plan's deployment
"$bin" plan --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --engine vllm --search exact --out "$tmp/p8.json" >/dev/null 2>&1 || bad "plan --out p8.json"
cat > "$tmp/vllm4.json" <<'RES'
{"num_prompts": 200, "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": null, "duration": 52.0, "completed": 200,
 "total_input_tokens": 204800, "total_output_tokens": 25600, "request_throughput": 3.84, "output_throughput": 491.5,
 "mean_ttft_ms": 45.1, "median_ttft_ms": 40.0, "p99_ttft_ms": 91.4, "mean_tpot_ms": 7.9, "median_tpot_ms": 7.8, "p99_tpot_ms": 9.2}
RES
sed 's/"request_rate": 4.0/"request_rate": 8.0/' "$tmp/vllm4.json" > "$tmp/vllm8.json"
expect 0 'TTFT p99 \(ms\) +[0-9.]+ +91\.40 +[-+][0-9.]+%' -- check --plan "$tmp/p8.json" --measured "$tmp/vllm4.json"
expect 0 'traffic +200 requests, Poisson at 4 requests/s; input 1,024, output 128 tokens' -- check --plan "$tmp/p8.json" --measured "$tmp/vllm4.json"
expect 0 '"metric": "tpot_mean_ms"' -- check --plan "$tmp/p8.json" --measured "$tmp/vllm4.json" --json
printf '{"completed": 3, "mean_ttft_ms": "fast"}' > "$tmp/badres.json"
expect 2 "^shardwise: $tmp/badres.json: field 'mean_ttft_ms': expected a number, found the string \"fast\"" -- check --plan "$tmp/p8.json" --measured "$tmp/badres.json"
expect 2 "^shardwise: $tmp/nope.json" -- check --plan "$tmp/p8.json" --measured "$tmp/nope.json"
expect 0 'step overhead \(us\) ' -- calibrate --plan "$tmp/p8.json" --measured "$tmp/vllm4.json" "$tmp/vllm8.json" --out "$tmp/prof.yaml"
grep -q '^schema: "shardwise-calibration/1"' "$tmp/prof.yaml" && ok || bad "calibrate wrote no profile"
expect 2 '^shardwise: --out: expected a file other than the results it reads' -- calibrate --plan "$tmp/p8.json" --measured "$tmp/vllm4.json" --out "$tmp/vllm4.json"
expect 0 'INFEASIBLE|verdict' -- simulate --plan "$tmp/p8.json" --mode serve --rate 4 --requests 200 --calibration "$tmp/prof.yaml"
expect 0 'note: the calibration profile measured an instance of tp 1' -- simulate --model llama-3.1-8b --cluster h100x2 --tp 2 --batch 8 --workload chat-1k-1k --calibration "$tmp/prof.yaml"
expect 2 "^shardwise: $tmp/prof.yaml: field 'gpu': expected a profile measured on the cluster's GPU, h200, found 'h100'" -- simulate --model llama-3.1-8b --cluster h200x1 --batch 8 --workload chat-1k-1k --calibration "$tmp/prof.yaml"
expect 2 "^shardwise: $tmp/prof.yaml: field 'gpu': expected one of the swept GPUs \(h200\)" -- sweep --model llama-3.1-8b --gpus h200 --counts 1 --calibration "$tmp/prof.yaml"

# everyday names (issue 28): HF ids and letter case name presets; slips get a guess
expect 0 'plan +tp 1 ' -- simulate --model deepseek-ai/DeepSeek-V3 --cluster H100x16 --batch 8
expect 2 "found 'llama3.1-8b' \(did you mean llama-3.1-8b\?\)" -- simulate --model llama3.1-8b --cluster h100x8
expect 2 "found 'h10' \(did you mean h100\?\)" -- simulate --model llama-3.1-8b --cluster h10x8
expect 2 "found 'vlm' \(did you mean vllm\?\)" -- simulate --model llama-3.1-8b --cluster h100x8 --engine vlm
expect 2 '^--tpot: did you mean --tpot-ms\?' -- plan --model llama-3.1-8b --cluster h100x8 --workload chat-1k-1k --tpot 50
expect 2 "^'plna' is not a command \(did you mean plan\?\)" -- plna --model x
expect 0 'SLOs +TTFT p99 <= 2000 ms, TPOT p90 <= 50 ms' -- simulate --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --mode serve --rate 2 --requests 100 --slo 'ttft:p99<=2000,tpot:p90<=50'
expect 2 "^shardwise: --slo: expected comma-separated bounds" -- simulate --model llama-3.1-8b --cluster h100x1 --workload chat-1k-1k --mode serve --rate 2 --slo 'ttft:p98<=2000'
"$bin" plan --model meta-llama/Llama-3.1-8B --cluster h100x1 --workload chat-1k-1k --engine vllm --search exact --out "$tmp/hf.json" >/dev/null 2>&1 || bad "plan with an HF id"
expect 0 '^vllm serve meta-llama/Llama-3.1-8B ' -- launch --plan "$tmp/hf.json"

# simulate --engine follows the engine's sharding (issue 28, item 2): dp-mlp under attention DP
expect 0 'sharding +ffn1=none ffn2=none' -- simulate --model deepseek-v3 --cluster h100x72 --attn-dp 72 --ep 72 --redundant-experts 32 --engine sglang --batch 4608
expect 2 'the MLP width 72 \(tp x attn_dp\) does not divide' -- simulate --model deepseek-v3 --cluster h100x72 --attn-dp 72 --ep 72 --redundant-experts 32 --batch 4608
expect 0 'note: vllm runs these degrees with sharding embedding=none ffn1=none ffn2=none lm_head=none; simulating --sharding megatron as given' -- simulate --model deepseek-v3 --cluster h100x32 --attn-dp 32 --ep 32 --engine vllm --sharding megatron --batch 64

# serve plans: by default only layouts an engine runs as planned; --engine any keeps every layout (issue 27, item 3)
expect 0 '^engines +runs as planned on ' -- plan --model llama-3.1-8b --cluster h100x2 --workload chat-1k-1k --mode serve --requests 200 --top-k 2 --no-disagg
expect 0 '^engines +' -- plan --model llama-3.1-8b --cluster h100x2 --workload chat-1k-1k --mode serve --requests 200 --top-k 2 --no-disagg --engine any
expect 2 '^shardwise: --engine-version: expected a named engine beside it' -- plan --model llama-3.1-8b --cluster h100x2 --workload chat-1k-1k --mode serve --engine any --engine-version 0.11

# phase plans (issue 29): plan --phases, the plan file, simulate --plan and launch
printf 'gpu: {base: a100-40gb, pcie_bandwidth: 17.18 GB/s}\nnvlink_domain: 1\nnum_gpus: 8\n' >"$tmp/a100pcie.yaml"
printf 'mode: offline\nisl: 2542\nosl: 297\n' >"$tmp/arxiv.yaml"
expect 0 '^verdict +phase plan / best static = 1\.[0-9]+x' -- plan --model llama-2-70b --cluster "$tmp/a100pcie.yaml" --workload "$tmp/arxiv.yaml" --phases --out "$tmp/phases.json"
expect 0 '^phases +prefill tp 1 x attn_dp 1 x pp 8 -> decode ' -- simulate --plan "$tmp/phases.json"
expect 0 '"buffer_seqs": [0-9]+' -- simulate --plan "$tmp/phases.json" --json
expect 0 '^# .*phases.json is a phase plan .*no mainstream engine' -- launch --plan "$tmp/phases.json" --engine vllm
# a newline in the plan's path stays inside the phase-plan comment (escaped); the commands quote it
nl_plan="$tmp/p"$'\n'"touch pwned.json"
cp "$tmp/phases.json" "$nl_plan"
if "$bin" launch --plan "$nl_plan" --engine vllm 2>&1 | grep -q '^touch pwned.json is a phase plan'; then bad "a newline in a phase plan's path escaped launch's comment"; else ok; fi
expect 0 "^phases +prefill .*Seesaw's schedule" -- simulate --plan "$tmp/phases.json" --mode serve --rate 0.3 --requests 300
expect 2 '^shardwise: --concurrency: expected --rate R or a trace beside a phase plan' -- simulate --plan "$tmp/phases.json" --mode serve --concurrency 8 --requests 100
expect 0 '^static +.*phase plan / static = [0-9.]+x' -- plan --model llama-2-70b --cluster "$tmp/a100pcie.yaml" --workload "$tmp/arxiv.yaml" --mode serve --requests 200 --phases --slo 'tpot:p99<=250'
expect 0 '^search +rl over [0-9]+ phase plans' -- plan --model llama-2-70b --cluster "$tmp/a100pcie.yaml" --workload "$tmp/arxiv.yaml" --mode serve --requests 200 --phases --slo 'tpot:p99<=250'
expect 2 '^shardwise: --search: expected rl \(default\), sa or ga beside --phases' -- plan --model llama-2-70b --cluster "$tmp/a100pcie.yaml" --workload "$tmp/arxiv.yaml" --mode serve --phases --search exact
expect 2 '^shardwise: --phases: expected an offline or serve workload' -- plan --model llama-3.1-8b --cluster h100x1 --workload decode-16k --phases
expect 2 '^shardwise: --host-buffer-gib: expected GiB of host memory per GPU' -- plan --model llama-2-70b --cluster a100x8 --workload "$tmp/arxiv.yaml" --phases --host-buffer-gib -1
expect 2 '^shardwise: --phases: expected no --engine beside it' -- plan --model llama-2-70b --cluster a100x8 --workload "$tmp/arxiv.yaml" --phases --engine vllm

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
