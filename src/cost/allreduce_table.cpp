#include "cost/allreduce_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace shardwise {

Expected<std::vector<AllReduceRow>> parse_allreduce_table(const std::string& text, const std::string& file) {
  auto t = detail::read_csv_table(text, file, {"silicon", "collective", "kernel", "group", "bytes", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<AllReduceRow> out;
  int row = 1;  // the header is row 1, as in the other tables
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
  AllReduceCurve c;
  static_cast<TimeCurve&>(c) = build_time_curve(std::move(pts));
  return c;
}

namespace {
// The rows of one GPU and group size of one kernel kind (is_engine_allreduce, is_nccl_allreduce).
std::vector<AllReduceRow> rows_of(const SiliconTables& tables, const std::string& silicon, std::int64_t g, bool (*kind)(const AllReduceRow&)) {
  std::vector<AllReduceRow> out;
  for (const auto& r : tables.allreduce) {
    if (r.silicon == silicon && r.group == g && kind(r)) out.push_back(r);
  }
  return out;
}
}  // namespace

AllReduceProfile custom_allreduce_profile_for(const GpuSpec& gpu, const SiliconTables& tables) {
  AllReduceProfile p;
  const auto rows_of = [&](const std::string& silicon, std::int64_t g) { return shardwise::rows_of(tables, silicon, g, is_engine_allreduce); };
  for (std::int64_t g = 2; g < static_cast<std::int64_t>(p.by_size.size()); ++g) {
    // its own rows of this group size, else the H100's for the H200 (the same NVLink 4 and NVSwitch)
    std::string source = gpu.name;
    std::vector<AllReduceRow> rows = rows_of(source, g);
    const bool own = !rows.empty();
    if (!own && gpu.name == "h200") rows = rows_of(source = "h100", g);
    const auto measured_on = find_gpu(source);
    if (rows.empty() || !measured_on) continue;
    AllReduceCurve c = build_allreduce_curve(rows);
    c.link_bw = measured_on->nvlink_bandwidth.value();
    c.basis = own ? Basis::kMeasured : Basis::kTransferred;
    const std::string key = source + "/" + std::to_string(g);
    const bool from_dir = std::find(tables.dir_allreduce.begin(), tables.dir_allreduce.end(), key) != tables.dir_allreduce.end();
    c.source = fmt::format("{}: {} engine custom all-reduce, {} GPUs{} ({} rows, {:.0f}-{:.0f} B)",
                           from_dir ? tables.dir + "/allreduce.csv" : std::string("data/silicon/allreduce.csv"), source, g,
                           own ? "" : " (on the H200: the same NVLink and NVSwitch)", c.rows, c.b_lo, c.b_hi);
    p.by_size[static_cast<std::size_t>(g)] = std::move(c);
    p.present = true;
  }
  return p;
}

AllReduceProfile custom_allreduce_profile_for(const GpuSpec& gpu) { return custom_allreduce_profile_for(gpu, builtin_silicon()); }

namespace {
// The GPU whose NCCL rows another of the same NVLink generation and bandwidth takes.
const char* nccl_source_for(const std::string& gpu) {
  if (gpu == "h100" || gpu == "h20") return "h200";                     // NVLink 4, NVSwitch, 450 GB/s per direction
  if (gpu == "gb200" || gpu == "b300" || gpu == "gb300") return "b200";  // NVLink 5, 900 GB/s per direction
  return nullptr;
}
double ring_share(std::int64_t n) { return 2.0 * static_cast<double>(n - 1) / static_cast<double>(n); }
}  // namespace

AllReduceProfile nccl_allreduce_profile_for(const GpuSpec& gpu, const SiliconTables& tables) {
  AllReduceProfile p;
  const auto rows_of = [&](const std::string& silicon, std::int64_t g) { return shardwise::rows_of(tables, silicon, g, is_nccl_allreduce); };
  const auto any_rows = [&](const std::string& silicon) {
    return std::any_of(tables.allreduce.begin(), tables.allreduce.end(), [&](const AllReduceRow& r) { return r.silicon == silicon && is_nccl_allreduce(r); });
  };
  std::string source = gpu.name;
  bool own = any_rows(source);
  if (!own) {
    const char* from = nccl_source_for(gpu.name);
    if (!from || !any_rows(from)) return p;
    source = from;
  }
  const auto measured_on = find_gpu(source);
  if (!measured_on) return p;
  const std::int64_t n = static_cast<std::int64_t>(p.by_size.size());
  std::vector<std::int64_t> measured;  // the group sizes with rows
  for (std::int64_t g = 2; g < n; ++g) {
    std::vector<AllReduceRow> rows = rows_of(source, g);
    if (rows.empty()) continue;
    AllReduceCurve c = build_allreduce_curve(rows);
    c.link_bw = measured_on->nvlink_bandwidth.value();
    c.basis = own ? Basis::kMeasured : Basis::kTransferred;
    const std::string key = source + "/" + std::to_string(g) + "/nccl";
    const bool from_dir = std::find(tables.dir_allreduce.begin(), tables.dir_allreduce.end(), key) != tables.dir_allreduce.end();
    c.source = fmt::format("{}: {} NCCL all-reduce, {} GPUs{} ({} rows, {:.0f}-{:.0f} B)",
                           from_dir ? tables.dir + "/allreduce.csv" : std::string("data/silicon/allreduce.csv"), source, g,
                           own ? "" : fmt::format(" (on the {}: the same NVLink)", gpu.name), c.rows, c.b_lo, c.b_hi);
    p.by_size[static_cast<std::size_t>(g)] = std::move(c);
    measured.push_back(g);
  }
  if (measured.empty()) return p;
  p.present = true;
  // the other sizes at the bus bandwidth of the nearest measured one (the larger on a tie)
  for (std::int64_t g = 2; g < n; ++g) {
    if (!p.by_size[static_cast<std::size_t>(g)].empty()) continue;
    std::int64_t m = measured.front();
    for (const std::int64_t k : measured) {
      if (std::abs(k - g) <= std::abs(m - g)) m = k;
    }
    AllReduceCurve c = p.by_size[static_cast<std::size_t>(m)];
    const double f = ring_share(g) / ring_share(m);
    for (double& lt : c.log_t) lt += std::log(f);
    c.t_lo *= f;
    c.t_hi *= f;
    c.tail_bw /= f;
    c.basis = Basis::kTransferred;
    c.source += fmt::format(", for {} GPUs at the bus bandwidth of {}", g, m);
    p.by_size[static_cast<std::size_t>(g)] = std::move(c);
  }
  return p;
}

AllReduceProfile nccl_allreduce_profile_for(const GpuSpec& gpu) { return nccl_allreduce_profile_for(gpu, builtin_silicon()); }

}  // namespace shardwise
