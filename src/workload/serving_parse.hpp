// Internal to workload/: the readers of the serving fields of a workload YAML.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "core/fields.hpp"
#include "workload/serving.hpp"

namespace shardwise::detail {
// "mean", "p50", "p90", "p95", "p99", "p99.9" -> 0 (the mean) or the percentile.
std::optional<double> parse_slo_stat(std::string_view key);
// slo.<key>: a number (the mean) or {mean: ms, p99: ms, ...}.
void read_slo(const FieldReader& slo, std::string_view key, double max_ms, std::optional<double>& mean, std::vector<SloBound>& pcts);
// arrivals, requests, seed, lengths.
void read_serve_spec(const FieldReader& r, ServeSpec& s, std::int64_t max_tokens);
}  // namespace shardwise::detail
