#include "cost/moe_comm_table.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace shardwise {

const char* moe_all_to_all_name(MoeAllToAll k) {
  switch (k) {
    case MoeAllToAll::kNvlinkOneSided: return "nvlink-one-sided";
    case MoeAllToAll::kDeepEpLowLatency: return "deepep-low-latency";
    case MoeAllToAll::kModel: break;
  }
  return "model";
}

namespace {
const char* family_key(MoeAllToAll k) {
  return k == MoeAllToAll::kNvlinkOneSided ? "nvlink_one_sided" : k == MoeAllToAll::kDeepEpLowLatency ? "deepep_ll" : "";
}

// log-log between (x0, t0) and (x1, t1) at x
double log_lerp(double x0, double t0, double x1, double t1, double x) {
  const double f = (std::log(x) - std::log(x0)) / (std::log(x1) - std::log(x0));
  return std::exp(std::log(t0) + f * (std::log(t1) - std::log(t0)));
}
}  // namespace

double MoeCommProfile::seconds(bool combine, double ep, double bytes, Basis* b) const {
  const auto at = [&](const Ep& c) { return (combine ? c.combine : c.dispatch).seconds_at(bytes); };
  const auto in = [&](const Ep& c) { return (combine ? c.combine : c.dispatch).in_range(bytes); };
  Basis out = basis;
  double t = 0;
  const auto hi = std::find_if(curves.begin(), curves.end(), [&](const Ep& c) { return static_cast<double>(c.ep) >= ep; });
  if (hi == curves.end() || (hi == curves.begin() && static_cast<double>(hi->ep) > ep)) {  // outside the measured EP sizes: the nearest
    const Ep& c = hi == curves.end() ? curves.back() : curves.front();
    t = at(c);
    out = Basis::kExtrapolated;
  } else if (static_cast<double>(hi->ep) == ep) {
    t = at(*hi);
    if (!in(*hi)) out = Basis::kExtrapolated;
  } else {
    const Ep& lo = *(hi - 1);
    t = log_lerp(static_cast<double>(lo.ep), at(lo), static_cast<double>(hi->ep), at(*hi), ep);
    if (!in(lo) || !in(*hi)) out = Basis::kExtrapolated;
  }
  if (b) *b = out;
  return t;
}

Expected<std::vector<MoeCommRow>> parse_moe_comm_table(const std::string& text, const std::string& file) {
  auto t = detail::read_csv_table(text, file,
                                  {"silicon", "family", "library", "op", "ep", "tokens", "hidden", "topk", "payload_bytes", "bytes", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<MoeCommRow> out;
  int row = 1;  // the header is row 1, as in the other tables
  for (const auto& c : *t) {
    ++row;
    if (c[0].empty()) return Error{file, fmt::format("row {} silicon", row), "a GPU of the catalog", "'' (empty)"};
    if (c[1] != "nvlink_one_sided" && c[1] != "deepep_ll") return Error{file, fmt::format("row {} family", row), "nvlink_one_sided or deepep_ll", "'" + c[1] + "'"};
    if (c[3] != "dispatch" && c[3] != "combine") return Error{file, fmt::format("row {} op", row), "dispatch or combine", "'" + c[3] + "'"};
    if (c[11] != "us") return Error{file, fmt::format("row {} unit", row), "us", "'" + c[11] + "'"};
    auto ep = detail::positive_cell(c[4], file, row, "ep");
    auto tokens = detail::positive_cell(c[5], file, row, "tokens");
    auto b = detail::positive_cell(c[9], file, row, "bytes");
    auto v = detail::positive_cell(c[10], file, row, "value");
    if (!ep) return ep.error();
    if (!tokens) return tokens.error();
    if (!b) return b.error();
    if (!v) return v.error();
    if (*ep < 2 || *ep != std::floor(*ep)) return Error{file, fmt::format("row {} ep", row), "a whole number of ranks, at least 2", "'" + c[4] + "'"};
    out.push_back({c[0], c[1], c[3], static_cast<std::int64_t>(*ep), static_cast<std::int64_t>(*tokens), *b, *v * 1e-6, c[12]});
  }
  return out;
}

MoeCommProfile moe_comm_profile_for(const GpuSpec& gpu, MoeAllToAll family, const SiliconTables& tables) {
  MoeCommProfile p;
  const std::string fam = family_key(family);
  if (fam.empty()) return p;
  const auto has = [&](const std::string& silicon) {
    return std::any_of(tables.moe_comm.begin(), tables.moe_comm.end(), [&](const MoeCommRow& r) { return r.silicon == silicon && r.family == fam; });
  };
  // the GPU whose rows a GPU without its own takes (docs/silicon.md, "Dispatch and combine")
  std::string source = gpu.name;
  if (!has(source)) {
    const std::string& g = gpu.name;
    if (family == MoeAllToAll::kNvlinkOneSided && g == "gb300") source = "gb200";
    if (family == MoeAllToAll::kDeepEpLowLatency && (g == "h100" || g == "h200")) source = has("h100") ? "h100" : "h800";
    if (family == MoeAllToAll::kDeepEpLowLatency && g == "mi325x") source = "mi300x";
    if (source == gpu.name || !has(source)) return p;
  }
  std::map<std::int64_t, std::pair<std::vector<std::pair<double, double>>, std::vector<std::pair<double, double>>>> by_ep;
  int rows = 0;
  for (const MoeCommRow& r : tables.moe_comm) {
    if (r.silicon != source || r.family != fam) continue;
    auto& e = by_ep[r.ep];
    (r.op == "combine" ? e.second : e.first).emplace_back(r.bytes, r.seconds);
    ++rows;
  }
  for (auto& [ep, pts] : by_ep) {
    if (pts.first.empty() || pts.second.empty()) continue;  // an EP size needs both ops
    p.curves.push_back({ep, build_time_curve(std::move(pts.first)), build_time_curve(std::move(pts.second))});
  }
  if (p.curves.empty()) return p;
  p.present = true;
  p.family = family;
  p.basis = source == gpu.name ? Basis::kMeasured : Basis::kTransferred;
  if (family == MoeAllToAll::kNvlinkOneSided) {
    p.one_domain = true;
  } else {
    p.decode_only = true;
    p.node = 8;            // the rows' nodes: 8 GPUs on NVLink / xGMI
    p.network_bw = 50e9;   // one 400 Gb/s NIC per GPU (DeepEP's CX7, MORI's CX7 / AINIC)
  }
  const bool from_dir = std::find(tables.dir_moe_comm.begin(), tables.dir_moe_comm.end(), source + "/" + fam) != tables.dir_moe_comm.end();
  p.source = fmt::format("{}: {} {} ({} rows, EP {}-{}{})", from_dir ? tables.dir + "/moe_comm.csv" : std::string("data/silicon/moe_comm.csv"), source, fam,
                         rows, p.curves.front().ep, p.curves.back().ep, p.basis == Basis::kTransferred ? fmt::format("; carried to the {}", gpu.name) : "");
  return p;
}

}  // namespace shardwise
