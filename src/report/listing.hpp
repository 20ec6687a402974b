// Listings for `shardwise models`, `clusters` and `workloads`.
#pragma once
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "workload/workload.hpp"

namespace shardwise {
std::string list_models_text(const std::vector<ModelSpec>& models);
std::string list_models_json(const std::vector<ModelSpec>& models);
std::string list_gpus_text();
std::string list_workloads_text(const std::vector<Workload>& workloads);
}  // namespace shardwise
