// A workload: what the model instance is asked to do, and the SLOs it must meet.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/dtype.hpp"

namespace shardwise {

enum class Mode {
  kDecode,   // steady decode steps at a given context (the paper's setting)
  kPrefill,  // process a batch of prompts of isl tokens (time to first token)
  kOffline,  // a stream of requests with isl input and osl output tokens
};
const char* to_string(Mode m);

struct Workload {
  std::string name;
  Mode mode = Mode::kDecode;
  std::int64_t isl = 0;      // input (prompt) tokens per request; prefill and offline
  std::int64_t osl = 0;      // output tokens per request; offline
  std::int64_t context = 0;  // decode: tokens already in each sequence's KV cache
  std::optional<std::int64_t> batch;  // concurrent sequences per model instance; nullopt = "max"
  std::optional<double> ttft_ms;      // time-to-first-token SLO
  std::optional<double> tpot_ms;      // time-per-output-token SLO
  DType weights_dtype = DType::kBf16;
  DType kv_dtype = DType::kBf16;
  friend bool operator==(const Workload&, const Workload&) = default;
};

// Command-line overrides; each set field replaces the workload's.
struct WorkloadOverrides {
  std::optional<std::string> mode;
  std::optional<std::int64_t> isl, osl, context;
  std::optional<std::string> batch;  // a number or "max"
  std::optional<double> ttft_ms, tpot_ms;
  std::optional<std::string> weights_dtype, kv_dtype;
};

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;  // 16M tokens per sequence
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 24;

Expected<Workload> parse_workload_yaml(std::string_view text, const std::string& file, const std::string& name);
// A preset name (decode-16k, ...) or a path to a workload YAML.
Expected<Workload> load_workload(const std::string& name_or_path);
std::vector<std::string> workload_preset_names();
// Applies overrides and re-checks the whole workload. Errors name the flag (--isl) when
// `origin` is empty (the command line), else the origin file and its field
// (plan.json: field 'workload_overrides.isl'). A mode switch drops the lengths and SLOs
// the new mode does not use; a length given for a mode that does not use it is an error.
Expected<Workload> apply_overrides(Workload w, const WorkloadOverrides& o, const std::string& origin = {});
// Checks the fields that depend on the mode (context for decode, isl/osl, ...).
std::optional<Error> validate_workload(const Workload& w, const std::string& file);

}  // namespace shardwise
