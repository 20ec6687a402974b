#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan) and runs each for a given
# time, seeded from the presets and the test corpus. Prints executions and
# findings per harness; exits non-zero if any harness found a crash.
#   usage: fuzz/run.sh [SECONDS_PER_HARNESS=60] [HARNESS...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}; shift || true
harnesses=("$@"); [ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_model fuzz_cluster fuzz_workload fuzz_plan_json fuzz_sharding fuzz_policy fuzz_cli fuzz_trace fuzz_prices fuzz_serving fuzz_result fuzz_python)

source scripts/deps.sh
install_missing clang libclang-rt-14-dev cmake ninja-build nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDWISE_FUZZ=ON >/dev/null
native=(); for h in "${harnesses[@]}"; do [ "$h" = fuzz_python ] || native+=("$h"); done
[ ${#native[@]} -eq 0 ] || cmake --build build-fuzz --target "${native[@]}"

seed() {  # harness -> seed files
  case $1 in
    fuzz_model) ls data/models/*.json tests/data/models/*/config.json tests/data/bad/m*.json ;;
    fuzz_cluster) ls tests/data/good/cluster-*.yaml tests/data/bad/c*.yaml ;;
    fuzz_workload) ls data/workloads/*.yaml tests/data/good/workload-*.yaml tests/data/bad/w*.yaml ;;
    fuzz_plan_json) ls fuzz/seeds/plan-*.json tests/data/bad/p*.json ;;
    fuzz_sharding) ls fuzz/seeds/sharding-* tests/data/bad/s*.yaml ;;
    fuzz_policy) ls fuzz/seeds/policy-*.txt tests/data/bad/y*.txt ;;
    fuzz_cli) ls fuzz/seeds/cli-*.txt ;;
    fuzz_trace) ls fuzz/seeds/trace-*.bin ;;
    fuzz_prices) ls data/prices/*.yaml tests/data/bad/r*.yaml ;;
    fuzz_serving) ls data/workloads/*.yaml tests/data/good/workload-serve.yaml tests/data/bad/w*.yaml ;;
    fuzz_result) ls fuzz/seeds/result-* ;;
  esac
}
# harness-specific flags: the CLI's own output is closed (-close_fd_mask=3: libFuzzer keeps
# its own), and a dictionary of commands, flags and values guides its mutations
extra() {
  case $1 in
    fuzz_cli) echo "-close_fd_mask=3 -dict=fuzz/cli.dict" ;;
  esac
}

status=0
summary=""
for h in "${harnesses[@]}"; do
  if [ "$h" = fuzz_python ]; then  # the Python module's argument layer, from Python (the regular build's module)
    echo "== $h for ${secs}s"
    rc=0
    PYTHONPATH=build/python python3 fuzz/fuzz_python.py "$secs" >build-fuzz/$h.log 2>&1 || rc=$?
    line="$(tail -1 build-fuzz/$h.log) (exit ${rc})"
    echo "$line"; summary+="$line"$'\n'
    if [ "$rc" != 0 ]; then status=1; tail -40 build-fuzz/$h.log; fi
    continue
  fi
  corpus=fuzz/corpus-$h; mkdir -p "$corpus" fuzz/artifacts
  seed "$h" | xargs -I{} cp {} "$corpus/"
  log=build-fuzz/$h.log
  echo "== $h for ${secs}s"
  rc=0
  # shellcheck disable=SC2046
  ./build-fuzz/fuzz/$h "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 $(extra "$h") \
    -print_final_stats=1 -artifact_prefix=fuzz/artifacts/$h- >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  findings=$(ls fuzz/artifacts/ 2>/dev/null | grep -c "^$h-" || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  line="$h: ${execs} executions in ${secs}s, ${cov:-cov: ?} edges, ${findings} findings (exit ${rc})"
  echo "$line"; summary+="$line"$'\n'
  if [ "$rc" != 0 ] || [ "$findings" != 0 ]; then status=1; tail -40 "$log"; fi
done
echo; echo "fuzz summary:"; printf '%s' "$summary"
exit $status
