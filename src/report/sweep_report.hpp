// Renderings of a sweep (docs/sweep.md): a table, CSV, an SVG chart of the price per million
// output tokens against the GPU count per GPU type, and one JSON object.
#pragma once
#include <string>
#include <vector>

#include "search/sweep.hpp"

namespace shardwise {
std::string sweep_text(const std::string& model, const std::string& workload, const std::vector<SweepPoint>& points);
std::string sweep_csv(const std::vector<SweepPoint>& points);
std::string sweep_svg(const std::string& title, const std::vector<SweepPoint>& points);
std::string sweep_json(const std::string& model, const std::string& workload, const std::vector<SweepPoint>& points);
}  // namespace shardwise
