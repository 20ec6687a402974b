#include "cost/allreduce_table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace shardwise {

double AllReduceCurve::seconds_at(double bytes) const {
  if (n == 0) return std::numeric_limits<double>::infinity();
  if (bytes <= b_lo) return std::exp(log_t[0]);
  if (bytes >= b_hi) return std::exp(log_t[static_cast<std::size_t>(n - 1)]) + (bytes - b_hi) / tail_bw;
  const double x = std::log(bytes);
  int i = 1;
  while (i < n - 1 && log_b[static_cast<std::size_t>(i)] < x) ++i;
  const auto u = static_cast<std::size_t>(i);
  const double f = (x - log_b[u - 1]) / (log_b[u] - log_b[u - 1]);
  return std::exp(log_t[u - 1] + f * (log_t[u] - log_t[u - 1]));
}

const AllReduceCurve* AllReduceProfile::of(std::int64_t group) const {
  if (!present || group < 2 || group >= static_cast<std::int64_t>(by_size.size())) return nullptr;
  const AllReduceCurve& c = by_size[static_cast<std::size_t>(group)];
  return c.n > 0 ? &c : nullptr;
}

Expected<std::vector<AllReduceRow>> parse_allreduce_table(const std::string& text, const std::string& file) {
  auto t = detail::read_csv_table(text, file, {"silicon", "collective", "kernel", "group", "bytes", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<AllReduceRow> out;
  int row = 0;
  for (const auto& c : *t) {
    ++row;
    if (c[1] != "all_reduce") return Error{file, fmt::format("row {} collective", row), "all_reduce", "'" + c[1] + "'"};
    if (c[6] != "us") return Error{file, fmt::format("row {} unit", row), "us", "'" + c[6] + "'"};
    auto g = detail::positive_cell(c[3], file, row, "group");
    auto b = detail::positive_cell(c[4], file, row, "bytes");
    auto v = detail::positive_cell(c[5], file, row, "value");
    if (!g) return g.error();
    if (!b) return b.error();
    if (!v) return v.error();
    if (*g != std::floor(*g) || *g < 2 || *g > 8) return Error{file, fmt::format("row {} group", row), "a whole number of GPUs from 2 to 8", "'" + c[3] + "'"};
    out.push_back({c[0], c[2], static_cast<std::int64_t>(*g), *b, *v * 1e-6, c[7]});
  }
  return out;
}

const std::vector<AllReduceRow>& builtin_allreduce_rows() { return builtin_silicon().allreduce; }

AllReduceCurve build_allreduce_curve(const std::vector<AllReduceRow>& rows) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& r : rows) pts.emplace_back(r.bytes, r.seconds);
  std::sort(pts.begin(), pts.end());
  AllReduceCurve c;
  double running = 0;
  for (const auto& [b, t] : pts) {
    if (c.n == AllReduceCurve::kMaxPoints) break;
    running = std::max(running, t);  // more bytes never faster: a measured dip is noise
    const auto i = static_cast<std::size_t>(c.n);
    if (c.n > 0 && std::log(b) <= c.log_b[i - 1]) {  // the same size twice: the slower
      c.log_t[i - 1] = std::log(running);
      continue;
    }
    c.log_b[i] = std::log(b);
    c.log_t[i] = std::log(running);
    ++c.n;
  }
  c.rows = static_cast<int>(rows.size());
  if (c.n == 0) return c;
  const auto last = static_cast<std::size_t>(c.n - 1);
  c.b_lo = std::exp(c.log_b[0]);
  c.b_hi = std::exp(c.log_b[last]);
  const double t_hi = std::exp(c.log_t[last]);
  const double db = c.n > 1 ? c.b_hi - std::exp(c.log_b[last - 1]) : 0.0, dt = c.n > 1 ? t_hi - std::exp(c.log_t[last - 1]) : 0.0;
  c.tail_bw = db > 0 && dt > 0 ? db / dt : c.b_hi / t_hi;  // the last segment's marginal bandwidth
  return c;
}

AllReduceProfile custom_allreduce_profile_for(const GpuSpec& gpu, const SiliconTables& tables) {
  AllReduceProfile p;
  const auto engine_rows_of = [&](const std::string& silicon) {
    std::vector<AllReduceRow> out;
    for (const auto& r : tables.allreduce) {
      if (r.silicon == silicon && r.kernel.rfind(kEngineCustomAllReduce, 0) == 0) out.push_back(r);
    }
    return out;
  };
  // its own rows, else the H100's for the H200 (the same NVLink 4 and NVSwitch)
  std::string source = gpu.name;
  std::vector<AllReduceRow> rows = engine_rows_of(source);
  const bool own = !rows.empty();
  if (!own && gpu.name == "h200") rows = engine_rows_of(source = "h100");
  const auto measured_on = find_gpu(source);
  if (rows.empty() || !measured_on) return p;
  double b_lo = 0, b_hi = 0;
  for (std::int64_t g = 2; g < static_cast<std::int64_t>(p.by_size.size()); ++g) {
    std::vector<AllReduceRow> mine;
    for (const auto& r : rows) {
      if (r.group == g) mine.push_back(r);
    }
    if (mine.empty()) continue;
    const AllReduceCurve c = build_allreduce_curve(mine);
    b_lo = b_lo == 0 ? c.b_lo : std::min(b_lo, c.b_lo);
    b_hi = std::max(b_hi, c.b_hi);
    p.by_size[static_cast<std::size_t>(g)] = c;
  }
  p.present = true;
  p.link_bw = measured_on->nvlink_bandwidth.value();
  p.basis = own ? Basis::kMeasured : Basis::kTransferred;
  const bool from_dir = std::find(tables.dir_allreduce.begin(), tables.dir_allreduce.end(), source) != tables.dir_allreduce.end();
  p.source = fmt::format("{}: {} engine custom all-reduce{} ({} rows, {:.0f} B-{:.0f} B)",
                         from_dir ? tables.dir + "/allreduce.csv" : std::string("data/silicon/allreduce.csv"), source,
                         own ? "" : " (the H200: the same NVLink and NVSwitch)", rows.size(), b_lo, b_hi);
  return p;
}

AllReduceProfile custom_allreduce_profile_for(const GpuSpec& gpu) { return custom_allreduce_profile_for(gpu, builtin_silicon()); }

}  // namespace shardwise
