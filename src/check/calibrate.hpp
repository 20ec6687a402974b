// `shardwise calibrate`: the engine-level terms fitted on one's own benchmark results of a
// deployment (docs/calibration.md). The terms are the step overhead (a fixed cost per engine
// iteration) and a time scale per op kind (dense GEMMs, expert GEMMs, attention, collectives);
// the fit minimises the mean squared log error of the fitted metrics (TTFT and TPOT mean and
// median, E2E mean, output throughput) over every result, plus a small penalty on each scale's
// log (so that what the results do not tell apart stays where the cost model put it).
#pragma once
#include <string>
#include <vector>

#include "check/check.hpp"
#include "cost/calibration.hpp"

namespace shardwise {

struct CalibrateOptions {
  Watch* watch = nullptr;
  int max_evaluations = 400;  // objective evaluations (each simulates every result once)
};

struct TermChange {
  std::string term;    // "step_overhead_us", "gemm", "experts", "attention", "comm"
  double before = 0, after = 0;
  bool fitted = false; // false: left as it was
  std::string why;     // why it was left (no such op in the plan, the results do not move it)
};

struct CalibrateResult {
  CalibrationProfile profile;
  std::vector<TermChange> terms;
  std::vector<CheckResult> before, after;  // each result against the prediction, before and after
  double rms_before = 0, rms_after = 0;    // root mean squared log error of the fitted metrics
  int evaluations = 0;
  bool stopped = false;                    // the watch stopped the fit: the best point so far
};

// The metrics the fit uses (CheckRow::metric).
bool is_fitted_metric(const std::string& metric);

// Fits the terms from `runs` (each a benchmark of deployment `d`; ctx holds the plan's
// workload and the parameters to start from). Errors: no run, a run with nothing to compare.
Expected<CalibrateResult> calibrate(const SimContext& ctx, const Deployment& d, const std::vector<MeasuredRun>& runs,
                                    const CalibrateOptions& opt = {});

std::string calibrate_text(const CalibrateResult& r);

}  // namespace shardwise
