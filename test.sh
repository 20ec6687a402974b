#!/usr/bin/env bash
# The whole suite: installs missing Debian packages, builds with warnings as
# errors, runs every test through ctest; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/deps.sh
install_missing "${SHARDWISE_BUILD_DEPS[@]}" "${SHARDWISE_TEST_DEPS[@]}" "${SHARDWISE_BROWSER_DEPS[@]}" "${SHARDWISE_EXEC_DEPS[@]}" \
  "${SHARDWISE_PYTHON_DEPS[@]}" "${SHARDWISE_K8S_TEST_DEPS[@]}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDWISE_WERROR=ON -DSHARDWISE_TESTS=ON -DSHARDWISE_REQUIRE_MPI=ON -DSHARDWISE_REQUIRE_PYTHON=ON >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j2
