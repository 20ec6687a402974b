// The public measurements of ../shared/calibration/public-measurements.csv as
// simulator cases: each row becomes (model, cluster, workload, plan, metric).
#pragma once
#include <string>
#include <vector>

#include "cost/simulator.hpp"

namespace shardwise::bench {

enum class RowMetric { kOfflineMaxThroughput, kStaticBatchThroughput, kTtft };

struct PublicRow {
  int id = 0;
  std::string label;   // "Llama-3.1-70B TP8 1000/1000 offline"
  std::string gpu;     // "h100", "a100"
  RowMetric metric = RowMetric::kOfflineMaxThroughput;
  double measured = 0; // output tok/s per GPU, or TTFT in ms
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
  Plan plan;
  EngineTraits engine;  // from the engine and its version
};

// Reads and converts every row; a row the simulator cannot express is an error.
// Rows it cannot map (another model, GPU or scenario) are left out and listed in
// `skipped` with the reason, when given; only a file it cannot read is an error.
Expected<std::vector<PublicRow>> load_public_rows(const std::string& csv_path, std::vector<std::string>* skipped = nullptr);
// The prediction for a row under the given parameters (same unit as measured).
double predict(const PublicRow& r, const CostParams& p);
double abs_pct_error(double predicted, double measured);
std::string default_csv_path();

}  // namespace shardwise::bench
