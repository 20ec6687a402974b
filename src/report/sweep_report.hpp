// Renderings of a sweep (docs/sweep.md): a table, CSV, an SVG chart of the price per million
// output tokens against the GPU count (one series per GPU type, format and engine), and one
// JSON object. A serving sweep's points carry the deployment plan --mode serve chose.
#pragma once
#include <string>
#include <vector>

#include "search/sweep.hpp"
#include "workload/workload.hpp"

namespace shardwise {

// What every rendering says about the sweep as a whole.
struct SweepHeader {
  std::string model, workload;
  Workload w;               // the workload after the command's overrides (its mode and SLOs)
  double target_rate = 0;   // a serving sweep's target (0: the most requests/s each point serves)
  PriceTable prices;        // which GPUs are priced (a point without a price says why)
};

std::string sweep_title(const SweepHeader& h);
std::string sweep_text(const SweepHeader& h, const std::vector<SweepPoint>& points);
std::string sweep_csv(const std::vector<SweepPoint>& points);
std::string sweep_svg(const SweepHeader& h, const std::vector<SweepPoint>& points);
std::string sweep_json(const SweepHeader& h, const std::vector<SweepPoint>& points);
}  // namespace shardwise
