// plan.json (schema "shardwise-plan/1", docs/plan-format.md): the degrees,
// batch and per-slot sharding, plus the names of the model, cluster and
// workload it was made for.
#pragma once
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "plan/phases.hpp"
#include "plan/plan.hpp"
#include "workload/workload.hpp"

namespace shardwise {

struct PlanFile {
  Plan plan;
  std::string model, cluster, workload;  // names or paths as given when the plan was made (may be empty)
  WorkloadOverrides overrides;           // command-line overrides the plan was made with
  // A disaggregated deployment (docs/serving.md, "Disaggregated prefill and decode"): `plan`
  // is then the decode pool (replicas = its instances) and this the prefill pool. JSON:
  // the top-level degrees and sharding are the decode pool's, "disaggregated": {"prefill":
  // {degrees, sharding, micro_batches, redundant_experts}} the prefill pool's.
  std::optional<Plan> prefill_pool = std::nullopt;
  // A phase plan (docs/phases.md). JSON "phases": {"prefill": {degrees, sharding,
  // micro_batches, redundant_experts, two_batch_overlap, batch}, "decode": {the same; batch:
  // sequences decoded at once per instance or "max"}, "buffer_seqs"}. The top level is then
  // the static plan that runs where phases cannot (plan --phases writes the best static plan
  // there): what launch starts, the nearest runnable plan.
  std::optional<PhasePlan> phases = std::nullopt;
  // Engine settings the plan was chosen with (plan --mode serve): the running-sequence cap and
  // the tokens per iteration, per scheduling lane (scheduler_lanes). JSON "engine_settings": {"max_num_seqs",
  // "max_num_tokens"}; simulate and launch apply them unless flags say otherwise.
  std::optional<std::int64_t> max_num_seqs = std::nullopt, max_num_tokens = std::nullopt;
  // A disaggregated plan: the prefill pool's own engine settings (JSON "disaggregated":
  // {"prefill": {..., "engine_settings": {"max_num_seqs", "max_num_tokens"}}}; the top-level
  // "engine_settings" are then the decode pool's). Absent: the decode pool's apply to both.
  std::optional<std::int64_t> prefill_max_num_seqs = std::nullopt, prefill_max_num_tokens = std::nullopt;
  // decode iterations per scheduling decision ("engine_settings": {"decode_steps"}; SGLang's
  // --num-continuous-decode-steps), when the plan was made with more than the engine's 1
  std::optional<std::int64_t> decode_steps = std::nullopt;
  // TensorRT-LLM's attention-DP balancing the plan was made with ("engine_settings":
  // {"adp_balance": {"batching_wait_iters", "timeout_iters"}}; --adp-balance)
  std::optional<std::pair<std::int64_t, std::int64_t>> adp_balance = std::nullopt;
  // the CUDA-graph batch sizes the plan was made with, per attention-DP rank, ascending
  // ("engine_settings": {"cuda_graph_batch_sizes": [128, 256]}; --cuda-graph-batch-sizes)
  std::optional<std::vector<std::int64_t>> cuda_graph_batch_sizes = std::nullopt;
  // The serving engine the plan was made for (plan --engine): JSON "engine": {"name",
  // "version"}; simulate --plan and launch use it unless --engine says otherwise. The name
  // and version are checked where they are used (the engine profiles live above plan/).
  std::optional<std::string> engine = std::nullopt, engine_version = std::nullopt;
  // The cost model the plan was made with (plan --kernel-tables / --silicon DIR /
  // --calibration FILE; Python kernel_tables= / silicon= / calibration=): JSON "cost":
  // {"kernel_tables", "silicon", "calibration"}, paths as given; simulate --plan, check and
  // launch's serving prediction replay it unless their own cost flags say otherwise.
  struct Cost {
    bool kernel_tables = false;
    std::string silicon, calibration;  // "" none
    friend bool operator==(const Cost&, const Cost&) = default;
  };
  std::optional<Cost> cost = std::nullopt;
};

constexpr const char* kPlanSchema = "shardwise-plan/1";
std::string plan_to_json(const PlanFile& f);
Expected<PlanFile> parse_plan_json(std::string_view text, const std::string& file);
Expected<PlanFile> load_plan_file(const std::string& path);

}  // namespace shardwise
