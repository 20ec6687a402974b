// The checks and fitting behind `shardwise launch` and the Python launch(): one
// code path, so a plan file is refused (or launched) the same way on both surfaces.
#pragma once
#include <string>

#include "core/error.hpp"
#include "hardware/cluster.hpp"
#include "model/model_spec.hpp"
#include "plan/plan_json.hpp"
#include "report/launch.hpp"
#include "workload/workload.hpp"

namespace shardwise {

// The launch commands of plan file `f` (read from `file`, named in messages) on the
// model, cluster and workload it names (loaded, with its overrides applied). Refused
// (an Error naming the field): control characters in the model path or head address
// (no command line a user reads can carry them), a port outside 0..65535, a plan or
// prefill pool not valid on the model and cluster, disaggregated pools with more GPUs
// than the cluster has, a --model-path folder whose config.json is another model.
Expected<std::string> launch_plan(const PlanFile& f, const std::string& file, const ModelSpec& model, const ClusterSpec& cluster,
                                  const Workload& workload, const LaunchOptions& o);

}  // namespace shardwise
