#include "cost/elementwise_table.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace shardwise {

double ElementwiseProfile::seconds(const TimeCurve& c, double bytes) const {
  // the time above the launch-and-tail floor scales with HBM; the floor does not
  const double scale = &c == &act ? act_scale : rope_scale;
  const double t = c.seconds_at(bytes);
  if (scale == 1.0) return t;
  const double floor = c.t_lo;
  return floor + (t - floor) * scale;
}

Expected<std::vector<ElementwiseRow>> parse_elementwise_table(const std::string& text, const std::string& file) {
  auto t = detail::read_csv_table(text, file, {"silicon", "op", "model", "tokens", "tp", "bytes", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<ElementwiseRow> out;
  int row = 1;  // the header is row 1, as in the other tables
  for (const auto& c : *t) {
    ++row;
    if (c[1] != "mlp_act" && c[1] != "attn_rope") return Error{file, fmt::format("row {} op", row), "mlp_act or attn_rope", "'" + c[1] + "'"};
    if (c[7] != "us") return Error{file, fmt::format("row {} unit", row), "us", "'" + c[7] + "'"};
    auto tokens = detail::positive_cell(c[3], file, row, "tokens");
    auto tp = detail::positive_cell(c[4], file, row, "tp");
    auto b = detail::positive_cell(c[5], file, row, "bytes");
    auto v = detail::positive_cell(c[6], file, row, "value");
    if (!tokens) return tokens.error();
    if (!tp) return tp.error();
    if (!b) return b.error();
    if (!v) return v.error();
    out.push_back({c[0], c[1], c[2], static_cast<std::int64_t>(*tokens), static_cast<std::int64_t>(*tp), *b, *v * 1e-6, c[8]});
  }
  return out;
}

ElementwiseProfile elementwise_profile_for(const GpuSpec& gpu, const SiliconTables& tables) {
  ElementwiseProfile p;
  const auto curve = [&](const char* op, TimeCurve& out, double& scale) {
    const auto rows_of = [&](const std::string& silicon) {
      std::vector<std::pair<double, double>> pts;
      for (const auto& r : tables.elementwise) {
        // an H800's rows count as the H100's (the same HBM3 at the same clocks)
        if (detail::source_key(r.silicon) == silicon && r.op == op) pts.emplace_back(r.bytes, r.seconds);
      }
      return pts;
    };
    std::string source = detail::source_key(gpu.name);
    auto pts = rows_of(source);
    const bool own = !pts.empty();
    if (!own) pts = rows_of(source = "h100");
    const auto measured_on = find_gpu(source);
    if (pts.empty() || !measured_on) return false;
    out = build_time_curve(std::move(pts), /*bin_octaves=*/true);
    out.basis = own ? Basis::kMeasured : Basis::kTransferred;
    scale = own ? 1.0 : measured_on->hbm_bandwidth.value() / gpu.hbm_bandwidth.value();
    const std::string key = source + "/" + op;
    const bool from_dir = std::find(tables.dir_elementwise.begin(), tables.dir_elementwise.end(), key) != tables.dir_elementwise.end();
    out.source = fmt::format("{}: {} {} ({} rows, {:.3g}-{:.3g} B{})", from_dir ? tables.dir + "/elementwise.csv" : std::string("data/silicon/elementwise.csv"),
                             source, op, out.rows, out.b_lo, out.b_hi, own ? "" : fmt::format("; above the floor x{:.3f} by HBM bandwidth", scale));
    return true;
  };
  const bool a = curve("mlp_act", p.act, p.act_scale), r = curve("attn_rope", p.rope, p.rope_scale);
  p.present = a && r;
  return p;
}

}  // namespace shardwise
