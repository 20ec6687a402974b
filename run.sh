#!/usr/bin/env bash
# The main job on the built-in default: installs missing Debian packages, builds
# Release into build/, and plans the default case (the GPT-MoE-1.6T model,
# 16k-context decode, 2048 H100) beside the Megatron baseline. Extra arguments go
# to the command (e.g. --search sa --budget 10000 --out plan.json).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/deps.sh
install_missing "${SHARDWISE_BUILD_DEPS[@]}" "${SHARDWISE_TEST_DEPS[@]}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target shardwise
./build/shardwise plan --model gpt-moe-1.6t --workload decode-16k --cluster h100x2048 "$@"
