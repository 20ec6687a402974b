// `shardwise launch`: the command lines that start a plan on a real serving
// engine (vLLM, SGLang, TensorRT-LLM), and, where the engine cannot express the
// plan, the nearest plan it can run with both predicted costs (docs/launch.md).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cost/simulator.hpp"
#include "plan/plan_json.hpp"
#include "plan/space.hpp"

namespace shardwise {

enum class ServeEngine : std::uint8_t { kVllm, kSglang, kTrtllm };
std::optional<ServeEngine> parse_serve_engine(const std::string& name);  // "vllm", "sglang", "trtllm"
const char* to_string(ServeEngine e);
const char* engine_version(ServeEngine e);  // the versions whose flags we target

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

struct EngineFit {
  bool exact = false;                  // the engine runs the plan as it is (or an equal-cost twin)
  std::vector<std::string> differences;  // what the engine cannot express, plainly
  Plan plan;                           // the plan given
  Metrics plan_metrics;
  Plan runnable;                       // what the commands start (== plan when exact)
  Metrics runnable_metrics;
  bool runnable_found = false;
};
// The plan itself when the engine expresses it (slots whose choice changes no cost
// count as expressed); else the best-predicted plan among the engine's layouts
// nearest to it (the same pipeline depth; the same stage width tp x attn_dp in the
// engine's layouts, or the attention groups as replicas of tp GPUs) with the
// engine's sharding, at the plan's concurrency per GPU or, where that does not
// fit, the best batch of the ladder.
EngineFit fit_engine(ServeEngine e, const SimContext& ctx, const SearchSpace& space, const Plan& plan);

struct LaunchOptions {
  ServeEngine engine = ServeEngine::kVllm;
  std::string model_path;                    // empty: from the preset (HF repo id) or the config's folder
  std::string head_address = "<HEAD_NODE_IP>";
  int port = 0;                              // 0: the engine's default
  std::string role;                          // "prefill" or "decode" in a disaggregated deployment; "" aggregated
  std::int64_t first_gpu = 0;                // the first GPU of the deployment (a decode pool after the prefill pool's)
};
// The HF repository of a preset, or "" (synthetic models, files).
std::string hf_repo_for(const std::string& preset);

std::string launch_text(const SimContext& ctx, const PlanFile& file, const EngineFit& fit, const LaunchOptions& o);
// A disaggregated deployment (file.prefill_pool beside file.plan, the decode pool): each
// pool's commands with the engine's disaggregation flags (SGLang --disaggregation-mode,
// vLLM's NIXL KV connector, TensorRT-LLM's cache transceiver), then the router or proxy
// that sends a request to a prefill instance and on to a decode instance (docs/launch.md).
std::string launch_disagg_text(const SimContext& ctx, const PlanFile& file, const EngineFit& prefill, const EngineFit& decode,
                               const LaunchOptions& o);

}  // namespace shardwise
