// What each serving engine can run (vLLM, SGLang, TensorRT-LLM): its parallel layouts and
// the per-op sharding each implies. Read by the search (plan --engine searches only these),
// by capacity planning and by launch (docs/launch.md, "How a plan maps onto each engine").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost/simulator.hpp"

namespace shardwise {

enum class ServeEngine : std::uint8_t { kVllm, kSglang, kTrtllm };
std::optional<ServeEngine> parse_serve_engine(const std::string& name);  // "vllm", "sglang", "trtllm"
const char* to_string(ServeEngine e);

inline bool attention_dp(const Degrees& d) { return d.attn_dp > 1; }
// What an engine can run: its parallel layout and the per-op sharding that layout
// implies (the same for every layer). Empty when the plan can run as it is.
std::vector<std::string> engine_limits(ServeEngine e, const SimContext& ctx, const Plan& p);
// The shardings the engine can run with these degrees, its default first:
// Megatron's, except where attention data parallelism runs the dense MLPs
// data-parallel (vLLM and TensorRT-LLM always; SGLang with --moe-dense-tp-size 1).
std::vector<Sharding> engine_shardings(ServeEngine e, const SimContext& ctx, const Degrees& d);
inline Sharding engine_sharding(ServeEngine e, const SimContext& ctx, const Degrees& d) { return engine_shardings(e, ctx, d).front(); }
// SGLang's dense-MLP data parallelism (--moe-dense-tp-size 1) in this plan.
bool dense_mlp_data_parallel(const Plan& p);

}  // namespace shardwise
