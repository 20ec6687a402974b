// `shardwise verify`: resolves the plan, scales it (exec/tiny.hpp), then starts
// the MPI worker shardwise-exec under mpirun on the plan's instance size and
// relays its PASS / FAIL. MPI-free: the worker is a separate program.
#pragma once
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "exec/executor.hpp"
#include "plan/plan.hpp"

namespace shardwise::exec {

struct VerifyOptions {
  std::string model;       // preset or config.json path, as the worker will load it
  Plan plan;               // degrees, sharding, micro_batches (batch is chosen by the scaling)
  std::uint64_t seed = 1;
  std::int32_t decode_steps = 2;
  Fault fault;             // a collective to drop (tests that the checks catch it)
  std::string json;        // where the worker writes its JSON result ("" = none)
  std::string mpirun;      // "" = mpirun from PATH
  std::string worker;      // "" = shardwise-exec beside the running program
  bool quiet = false;
};

// "megatron", "allgather", "random:SEED" (a uniform choice per slot that has an op in the
// model) or a YAML/JSON file.
Expected<Sharding> resolve_sharding(const std::string& spec, const ModelSpec& m);

// Runs the check. Returns the worker's exit code (0 PASS, 1 FAIL) or an Error for
// bad input (an unscalable plan, no mpirun, no worker).
Expected<int> verify(const VerifyOptions& o);

}  // namespace shardwise::exec
