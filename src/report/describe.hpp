// The `describe` command's renderings of a model, a cluster and a workload.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/cluster.hpp"
#include "model/dtype.hpp"
#include "model/model_spec.hpp"
#include "workload/workload.hpp"

namespace shardwise {

struct DescribeOptions {
  DType weights_dtype = DType::kBf16;
  DType kv_dtype = DType::kBf16;
  // each component's format (resolve_formats), when the model is planned in a checkpoint's own
  // mixed formats: the weights are counted component by component
  std::optional<Formats> formats;
  bool formats_from_checkpoint = false;  // the weights' formats are the checkpoint's (no dtype given)
  std::vector<std::int64_t> contexts{1024, 4096, 16384, 32768, 65536};  // FLOPs/token and KV/sequence at these
};

std::string describe_model_text(const ModelSpec& m, const DescribeOptions& o);
// The fused-op chain of every layer class for one token (decode) at `context`, unsharded.
std::string describe_ops_text(const ModelSpec& m, const DescribeOptions& o, std::int64_t context);
std::string describe_model_json(const ModelSpec& m, const DescribeOptions& o);
std::string describe_cluster_text(const ClusterSpec& c);
std::string describe_cluster_json(const ClusterSpec& c);
std::string describe_workload_text(const Workload& w);
std::string describe_workload_json(const Workload& w);
// All of those requested in one JSON object {"model": ..., "cluster": ..., "workload": ...}.
std::string describe_json(const ModelSpec* m, const ClusterSpec* c, const Workload* w, const DescribeOptions& o);

}  // namespace shardwise
