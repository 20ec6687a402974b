// Prints every public measurement, predicted against measured, with the median
// and maximum absolute percentage error, using the calibration shipped in
// data/calibration/. Target (issue 3): median <= 12%, max <= 30%.
//   usage: validate_public [CSV]
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "public_rows.hpp"

int main(int argc, char** argv) {
  using namespace shardwise;
  using namespace shardwise::bench;
  const std::string path = argc > 1 ? argv[1] : default_csv_path();
  std::vector<std::string> skipped;
  auto rows = load_public_rows(path, &skipped);
  if (!rows) {
    std::fprintf(stderr, "validate_public: %s\n", rows.error().message().c_str());
    return 2;
  }
  fmt::print("{:>4}  {:<46} {:>12} {:>12} {:>8}  {}\n", "row", "case", "measured", "predicted", "error", "params");
  std::vector<double> errs;
  for (const auto& r : *rows) {
    const CostParams p = cost_params_for(r.gpu);
    const double pred = predict(r, p);
    const double e = abs_pct_error(pred, r.measured);
    errs.push_back(e);
    const char* unit = r.metric == RowMetric::kTtft ? "ms" : "tok/s/gpu";
    fmt::print("{:>4}  {:<46} {:>9.1f} {:<2} {:>9.1f} {:<2} {:>7.1f}%  {}{}\n", r.id, r.label, r.measured, unit[0] == 'm' ? "ms" : "t",
               pred, unit[0] == 'm' ? "ms" : "t", e, p.gpu, p.calibrated ? "" : " (uncalibrated)");
  }
  std::vector<double> s = errs;
  std::sort(s.begin(), s.end());
  const double median = s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
  fmt::print("\nrows {}  median abs error {:.1f}%  max abs error {:.1f}%  (targets: median <= 12%, max <= 30%)\n", s.size(), median,
             s.back());
  fmt::print("(t = output tokens/s per GPU)\n");
  if (!skipped.empty()) {
    fmt::print("\n{} rows not expressible here (listed, not counted):\n", skipped.size());
    for (const auto& why : skipped) fmt::print("  {}\n", why);
  }
  return 0;
}
