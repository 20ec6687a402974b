// A calibration profile: the engine-level terms `shardwise calibrate` fitted on one's own
// benchmark results (step overhead, a time scale per op kind), applied over a GPU's cost
// parameters by --calibration (Python: calibration=). File format "shardwise-calibration/1",
// YAML (docs/calibration.md). The profile also records what the results measured, so that
// a plan outside it is warned about rather than silently extrapolated.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "cost/params.hpp"

namespace shardwise {

struct SimContext;
struct Plan;

// One benchmark result a profile was fitted on: its file, the deployment it measured and
// the traffic it offered (rate 0 with users > 0: a closed loop; both 0: all at once).
struct CalibrationPoint {
  std::string file;
  double rate = 0;
  std::int64_t users = 0;
  std::int64_t requests = 0;
  double mean_input = 0, mean_output = 0;  // tokens per request
};

struct CalibrationProfile {
  std::string gpu;                    // the GPU the results were measured on (GpuSpec::name key, e.g. h100)
  std::string engine, engine_version; // the engine that served them ("" generic)
  std::string model;                  // the plan's model (preset name or path, as the plan names it)
  std::int32_t tp = 1, pp = 1, ep = 1, attn_dp = 1;  // the instance the results measured
  double step_overhead_us = 0;        // replaces the GPU's fitted step overhead
  TimeScales scales;
  double base_step_overhead_us = 0;   // the value before the fit (reported: what moved)
  double rms_log_error_before = 0, rms_log_error_after = 0;  // over the fitted metrics
  std::vector<CalibrationPoint> points;
};

constexpr const char* kCalibrationSchema = "shardwise-calibration/1";
Expected<CalibrationProfile> parse_calibration_profile(std::string_view text, const std::string& file);
Expected<CalibrationProfile> load_calibration_profile(const std::string& path);
std::string calibration_profile_yaml(const CalibrationProfile& c);

// The parameters with the profile's terms in place. A profile measured on another GPU is
// an error naming `origin` (the flag or keyword) and the profile's gpu field.
Expected<CostParams> apply_calibration(CostParams p, const CalibrationProfile& c, const std::string& gpu, const std::string& origin);

// Sentences for each way a plan and its workload lie outside what the profile measured:
// another model, engine or instance layout, mean lengths or offered load beyond the
// results' range (by more than a quarter). Empty when inside.
std::vector<std::string> calibration_warnings(const CalibrationProfile& c, const SimContext& ctx, const Plan& plan);

}  // namespace shardwise
