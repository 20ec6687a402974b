// The benchmark command `shardwise launch` writes beside the launch commands: the planned
// workload (its request count, arrivals and lengths) replayed against the launched server
// with the engine's own benchmark tool, writing the result file `shardwise check` reads
// (docs/check.md): vLLM's `vllm bench serve`, SGLang's `python3 -m sglang.bench_serving`,
// NVIDIA's `aiperf profile` for TensorRT-LLM.
#pragma once
#include <cstdint>
#include <string>

#include "cost/engine_limits.hpp"
#include "cost/simulator.hpp"

namespace shardwise {

struct BenchTarget {
  std::string model;      // the served model name (the launch's model path)
  std::string host;       // where the requests go (a placeholder for a load balancer or router)
  int port = 8000;
  std::string plan_file;  // for the `shardwise check` line ("" a placeholder)
  std::int64_t instances = 1;  // instances serving the workload (users and batches over all of them)
  std::int64_t batch = 0;      // a closed-form plan's concurrency per instance (decode, prefill, offline modes)
};

// The requests the benchmark sends: the workload's count, else enough for the simulation's
// steady state (2,000, or three minutes of Poisson arrivals, or ten per closed-loop user).
std::int64_t bench_requests(const Workload& w, std::int64_t instances, std::int64_t batch);

// The result file the command writes, as `shardwise check --measured` takes it.
std::string bench_result_file(ServeEngine e);

// "### the benchmark ..." with the command, notes on what the tool cannot express, and the
// `shardwise check` line; every word quoted for the shell.
std::string bench_text(const SimContext& ctx, ServeEngine e, const BenchTarget& t);

}  // namespace shardwise
