// Refits the H100 efficiency parameters on the public measurements and prints
// them as data/calibration/h100.yaml (with --write, writes that file).
// One parameter set per GPU type; rows of other GPUs are only reported.
// Objective: max(median / 12%, max / 30%) + 0.01 x mean, by coordinate descent
// from the defaults, multiplicative steps shrinking until none helps.
//   usage: calibrate [--write] [CSV]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "public_rows.hpp"

namespace {
using namespace shardwise;
using namespace shardwise::bench;

struct Score {
  double objective, median, max;
};

Score score(const std::vector<PublicRow>& rows, const CostParams& p) {
  std::vector<double> e;
  double sum = 0;
  for (const auto& r : rows) {
    if (r.gpu != p.gpu) continue;
    e.push_back(abs_pct_error(predict(r, p), r.measured));
    sum += e.back();
  }
  std::sort(e.begin(), e.end());
  const double median = e.size() % 2 ? e[e.size() / 2] : (e[e.size() / 2 - 1] + e[e.size() / 2]) / 2;
  return {std::max(median / 12.0, e.back() / 30.0) + 0.01 * sum / static_cast<double>(e.size()), median, e.back()};
}

struct Knob {
  const char* name;
  double CostParams::*field;
  double lo, hi;
};
}  // namespace

int main(int argc, char** argv) {
  bool write = false;
  std::string path = default_csv_path();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--write") == 0) {
      write = true;
    } else {
      path = argv[i];
    }
  }
  auto rows = load_public_rows(path);
  if (!rows) {
    std::fprintf(stderr, "calibrate: %s\n", rows.error().message().c_str());
    return 2;
  }
  CostParams p;  // the defaults of cost/params.hpp as the starting point
  p.gpu = "h100";
  p.step_overhead_us = 1000;  // a start inside the range (multiplicative steps cannot leave 0)
  // Bounds keep every parameter physical (what H100 kernels and NCCL are known to reach).
  const Knob knobs[] = {{"gemm_efficiency", &CostParams::gemm_efficiency, 0.4, 0.8},
                        {"gemm_half_rows", &CostParams::gemm_half_rows, 1.0, 512.0},
                        {"mem_efficiency", &CostParams::mem_efficiency, 0.6, 0.92},
                        {"attn_efficiency", &CostParams::attn_efficiency, 0.2, 0.75},
                        {"kernel_overhead_us", &CostParams::kernel_overhead_us, 1.0, 8.0},
                        {"comm_efficiency", &CostParams::comm_efficiency, 0.4, 0.95},
                        {"comm_overhead_us", &CostParams::comm_overhead_us, 1.0, 50.0},
                        {"attn_mem_efficiency", &CostParams::attn_mem_efficiency, 0.3, 0.92},
                        {"step_overhead_us", &CostParams::step_overhead_us, 0.0, 20000.0}};
  Score best = score(*rows, p);
  fmt::print("start: median {:.1f}% max {:.1f}% objective {:.3f}\n", best.median, best.max, best.objective);
  for (double step : {2.0, 1.4, 1.15, 1.05, 1.02}) {
    bool improved = true;
    int rounds = 0;
    while (improved && rounds++ < 20) {
      improved = false;
      for (const Knob& k : knobs) {
        for (double f : {step, 1.0 / step}) {
          CostParams q = p;
          q.*k.field = std::clamp(p.*k.field * f, k.lo, k.hi);
          const Score s = score(*rows, q);
          if (s.objective < best.objective - 1e-9) {
            best = s;
            p = q;
            improved = true;
          }
        }
      }
    }
    fmt::print("step {:.2f}: median {:.1f}% max {:.1f}% objective {:.3f}\n", step, best.median, best.max, best.objective);
  }
  const std::string yaml = fmt::format(
      "# Efficiency parameters for H100 SXM, fitted by bench/calibrate on\n"
      "# ../shared/calibration/public-measurements.csv (see docs/cost-model.md).\n"
      "# Fit: median abs error {:.1f}%, max {:.1f}% over the H100 rows.\n"
      "gpu: h100\ngemm_efficiency: {:.4f}\ngemm_half_rows: {:.2f}\nmem_efficiency: {:.4f}\nattn_efficiency: {:.4f}\n"
      "kernel_overhead_us: {:.3f}\ncomm_efficiency: {:.4f}\ncomm_overhead_us: {:.2f}\nattn_mem_efficiency: {:.4f}\n"
      "step_overhead_us: {:.1f}\n",
      best.median, best.max, p.gemm_efficiency, p.gemm_half_rows, p.mem_efficiency, p.attn_efficiency, p.kernel_overhead_us,
      p.comm_efficiency, p.comm_overhead_us, p.attn_mem_efficiency, p.step_overhead_us);
  fmt::print("\n{}", yaml);
  if (write) {
    const std::string out = std::string(SHARDWISE_REPO_DIR) + "/data/calibration/h100.yaml";
    std::ofstream f(out);
    f << yaml;
    fmt::print("wrote {} (rebuild to embed it)\n", out);
  }
  return 0;
}
