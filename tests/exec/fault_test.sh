#!/usr/bin/env bash
# A deliberately dropped collective must fail both checks of `shardwise verify`:
# the logits (max relative error over 1e-9) and the bytes (the ledger misses it).
# Usage: fault_test.sh path/to/shardwise
set -uo pipefail
SW="$1"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
check() {  # check NAME EXPECTED_RC ARGS...
  local name="$1" want="$2"; shift 2
  "$SW" verify "$@" --quiet --json "$TMP/r.json" >"$TMP/out" 2>&1
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; cat "$TMP/out"; fails=$((fails + 1)); return
  fi
  if [ "$want" = 1 ]; then
    # both checks must have failed: a large or missing (NaN/inf) error, and bytes that differ
    local err bytes dropped
    err=$(sed -n 's/.*"max_relative_error": *\([^,]*\),*$/\1/p' "$TMP/r.json")
    bytes=$(sed -n 's/.*"bytes_match": *\([a-z]*\).*/\1/p' "$TMP/r.json")
    dropped=$(sed -n 's/.*"dropped_calls": *\([0-9]*\).*/\1/p' "$TMP/r.json")
    if ! { [ "$err" = null ] || awk -v e="$err" 'BEGIN { exit !(e > 1e-9) }'; } || [ "$bytes" != false ] || [ "${dropped:-0}" -eq 0 ]
    then echo "FAIL $name: a check missed the fault"; cat "$TMP/out"; fails=$((fails + 1)); return; fi
  fi
  echo "ok   $name"
}
printf 'ffn_norm: tokens\no_proj: none\nffn1: none\nffn2: none\n' >"$TMP/residual.yaml"  # the residual alone is gathered at layer_out
printf 'embedding: none\nattn_norm: tokens\no_proj: none\n' >"$TMP/sliced.yaml"             # a replicated tensor sliced, then gathered
printf 'ffn_norm: tokens\n' >"$TMP/rs.yaml"                                                 # o_proj's partial sums reduce-scattered
printf 'attention: context\n' >"$TMP/ctx.yaml"                                              # decode combine of a context split
cat >"$TMP/plan.json" <<'JSON'
{"schema": "shardwise-plan/1", "model": "qwen3-30b-a3b", "cluster": "h100x8", "workload": "decode-16k",
 "degrees": {"tp": 2, "pp": 2, "ep": 2, "attn_dp": 1, "replicas": 2}, "batch": 64, "micro_batches": 0,
 "sharding": {"attn_norm": "tokens", "ffn_norm": "tokens", "expert_ffn1": "tokens", "expert_ffn2": "tokens"}}
JSON
# the same plans pass untouched ...
check "a plan file passes"                0 --plan "$TMP/plan.json"
check "megatron tp 2 passes"              0 --model llama-3.1-8b --tp 2
check "moe ep 2 passes"                   0 --model qwen3-30b-a3b --tp 2 --ep 2
check "pp 2 passes"                       0 --model llama-3.1-8b --tp 2 --pp 2
# ... and fail both checks with one collective dropped
check "dropped all-reduce (ffn_norm)"     1 --model llama-3.1-8b --tp 2 --drop ffn_norm:0
check "dropped all-gather (allgather ffn2)" 1 --model llama-3.1-8b --tp 2 --sharding allgather --drop layer_out:0
check "dropped all-to-all (dispatch)"     1 --model qwen3-30b-a3b --tp 2 --ep 2 --sharding "$TMP/rs.yaml" --drop dispatch:0
check "dropped all-reduce (replicated MoE, layer_out)" 1 --model qwen3-30b-a3b --tp 2 --ep 2 --drop layer_out:0
check "dropped send/recv (pipeline)"      1 --model llama-3.1-8b --tp 2 --pp 2 --drop pp_send_recv:-1
check "dropped first transfer, 4 stages"  1 --model llama-3.1-8b --tp 2 --pp 4 --drop pp_send_recv:-1:0
check "dropped context-attention gather"  1 --model deepseek-v3 --tp 2 --sharding random:3 --drop attention:1
check "dropped reduce-scatter (ffn_norm)" 1 --model llama-3.1-8b --tp 2 --sharding "$TMP/rs.yaml" --drop ffn_norm:0
check "dropped context-split decode combine" 1 --model llama-3.1-8b --tp 2 --sharding "$TMP/ctx.yaml" --drop o_proj:0:0:decode
check "dropped residual all-gather"       1 --model llama-3.1-8b --tp 2 --sharding "$TMP/residual.yaml" --drop layer_out:0
check "dropped gather of a sliced tensor" 1 --model llama-3.1-8b --tp 2 --sharding "$TMP/sliced.yaml" --drop ffn_norm:0
check "second of two collectives dropped" 1 --model qwen3-30b-a3b --tp 2 --ep 2 --sharding "$TMP/rs.yaml" --drop layer_out:0:1
# bad input: exit 2 with the rule named
"$SW" verify --model llama-3.1-8b --tp 32 >"$TMP/out" 2>&1; rc=$?
if [ "$rc" = 2 ] && grep -q "at most 16 ranks" "$TMP/out"; then echo "ok   too many ranks refused"; else echo "FAIL too many ranks: exit $rc"; cat "$TMP/out"; fails=$((fails + 1)); fi
"$SW" verify --model llama-3.1-8b --tp 2 --drop o_proj:0 >"$TMP/out" 2>&1; rc=$?
if [ "$rc" = 2 ] && grep -q "matched no collective" "$TMP/out"; then echo "ok   a drop that matches nothing refused"; else echo "FAIL drop matching nothing: exit $rc"; cat "$TMP/out"; fails=$((fails + 1)); fi
"$SW" verify --model llama-3.1-8b --tp 3 >"$TMP/out" 2>&1; rc=$?
if [ "$rc" = 2 ] && grep -q "valid on llama-3.1-8b" "$TMP/out"; then echo "ok   a plan invalid on the original refused"; else echo "FAIL tp 3: exit $rc"; cat "$TMP/out"; fails=$((fails + 1)); fi
"$SW" verify --model llama-3.1-8b --tp 2 --mpirun /nonexistent/mpirun >"$TMP/out" 2>&1; rc=$?
if [ "$rc" = 2 ] && grep -q "openmpi-bin" "$TMP/out"; then echo "ok   missing mpirun explained"; else echo "FAIL missing mpirun: exit $rc"; cat "$TMP/out"; fails=$((fails + 1)); fi
exit $fails
