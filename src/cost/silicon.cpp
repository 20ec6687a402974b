#include "cost/silicon.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/embedded_data.hpp"

namespace shardwise {
namespace {

// One CSV record (RFC 4180: quoted fields may hold commas and doubled quotes).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

// The records of a table with exactly the given header; numbers checked by the caller.
Expected<std::vector<std::vector<std::string>>> read_table(const std::string& text, const std::string& file,
                                                         const std::vector<std::string>& header) {
  std::vector<std::vector<std::string>> rows;
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    auto cells = split_csv(line);
    if (line_no == 1) {
      if (cells != header) {
        std::string want;
        for (const auto& h : header) want += (want.empty() ? "" : ",") + h;
        return Error{file, "line 1", "the header " + want, "'" + line + "'"};
      }
      continue;
    }
    if (cells.size() != header.size()) {
      return Error{file, fmt::format("line {}", line_no), fmt::format("{} columns", header.size()), fmt::format("{}", cells.size())};
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

Expected<double> positive(const std::string& s, const std::string& file, int row, const char* column) {
  double v = 0;
  const char* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || p != end || !std::isfinite(v) || !(v > 0)) return Error{file, fmt::format("row {} {}", row, column), "a positive number", "'" + s + "'"};
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double roofline(const GemmRow& r, double peak, double hbm, double bpw) {
  const double flops = 2.0 * r.m * r.n * r.k;
  const double bytes = bpw * (r.m * r.k + r.n * r.k) + 2.0 * r.m * r.n;  // A and B in the format, D in bf16
  return std::max(flops / peak, bytes / hbm);
}

std::string text_of(std::span<const EmbeddedFile> files, const char* name) {
  for (const auto& f : files) {
    if (std::string(f.name) == name) return f.text;
  }
  return {};
}

}  // namespace

const char* basis_name(Basis b) {
  switch (b) {
    case Basis::kModel: return "model";
    case Basis::kMeasured: return "measured";
    case Basis::kTransferred: return "transferred";
    case Basis::kExtrapolated: return "extrapolated";
  }
  return "model";
}

double GemmCurve::share_at(double m) const {
  if (n == 0) return 1.0;
  const double x = std::log(std::max(m, 1e-9));
  if (x <= log_m[0]) return share[0];
  for (int i = 1; i < n; ++i) {
    if (x <= log_m[static_cast<std::size_t>(i)]) {
      const auto a = static_cast<std::size_t>(i - 1), b = static_cast<std::size_t>(i);
      const double t = (x - log_m[a]) / (log_m[b] - log_m[a]);
      return share[a] + t * (share[b] - share[a]);
    }
  }
  return share[static_cast<std::size_t>(n - 1)];
}

const GemmFormatProfile& GemmProfile::of(DType d) const {
  if (d == DType::kFp8 || d == DType::kInt8) return fp8;
  if (d == DType::kFp4) return fp4;
  return bf16;
}

Expected<std::vector<GemmRow>> parse_gemm_table(const std::string& text, const std::string& file) {
  auto t = read_table(text, file, {"silicon", "dtype", "kernel", "M", "N", "K", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<GemmRow> out;
  int i = 1;
  for (const auto& c : *t) {
    ++i;
    GemmRow r{c[0], c[1], c[2], 0, 0, 0, 0, c[8]};
    for (auto [col, dst] : {std::pair{3, &r.m}, {4, &r.n}, {5, &r.k}}) {
      auto v = positive(c[static_cast<std::size_t>(col)], file, i, col == 3 ? "M" : col == 4 ? "N" : "K");
      if (!v) return v.error();
      *dst = *v;
    }
    auto v = positive(c[6], file, i, "value");
    if (!v) return v.error();
    if (c[7] == "ms") {
      r.seconds = *v * 1e-3;
    } else if (c[7] == "us") {
      r.seconds = *v * 1e-6;
    } else if (c[7] == "TFLOPS") {
      r.seconds = 2.0 * r.m * r.n * r.k / (*v * 1e12);  // the kernel's time at an exact shape: plain arithmetic
    } else {
      return Error{file, fmt::format("row {} unit", i), "ms, us or TFLOPS", "'" + c[7] + "'"};
    }
    out.push_back(std::move(r));
  }
  return out;
}

Expected<std::vector<CeilingRow>> parse_ceiling_table(const std::string& text, const std::string& file) {
  auto t = read_table(text, file, {"gpu", "dtype", "percent_of_spec", "M", "N", "K", "source_locator"});
  if (!t) return t.error();
  std::vector<CeilingRow> out;
  int i = 1;
  for (const auto& c : *t) {
    ++i;
    auto v = positive(c[2], file, i, "percent_of_spec");
    if (!v) return v.error();
    if (*v > 100) return Error{file, fmt::format("row {} percent_of_spec", i), "at most 100", c[2]};
    out.push_back({c[0], c[1], *v / 100.0, c[6]});
  }
  return out;
}

GemmCurve build_gemm_curve(const std::vector<GemmRow>& rows, double peak, double hbm, double bpw, double floor_s) {
  std::map<double, std::vector<double>> by_m;
  for (const auto& r : rows) {
    const double t = r.seconds - floor_s;
    if (t <= 0.1e-6) continue;  // a row the floor explains whole says nothing of the share
    by_m[r.m].push_back(std::min(1.0, roofline(r, peak, hbm, bpw) / t));
  }
  GemmCurve c;
  for (const auto& [m, shares] : by_m) {
    if (c.n == GemmCurve::kMaxPoints) break;
    const auto i = static_cast<std::size_t>(c.n++);
    c.log_m[i] = std::log(m);
    c.share[i] = median(shares);
    c.rows += static_cast<int>(shares.size());
  }
  if (c.n > 0) {
    c.m_lo = by_m.begin()->first;
    c.m_hi = std::prev(by_m.end())->first;
  }
  return c;
}

double gemm_floor(const std::vector<GemmRow>& rows, double peak, double hbm, double bpw) {
  double fl = 1e300;
  for (const auto& r : rows) fl = std::min(fl, r.seconds - roofline(r, peak, hbm, bpw));
  return rows.empty() ? 0.0 : std::max(0.0, fl);
}

namespace {
// The tables compiled into the binary, parsed once and the Hopper curves built once: constants
// derived from constants (thread-safe static initialisation), never modified.
struct SourceTables {
  std::vector<CeilingRow> ceilings;
  double floor_s = 0;
  GemmCurve bf16, fp8;
  bool ok = false;
};
const SourceTables& source_tables() {
  static const SourceTables t = [] {
    SourceTables s;
    const auto files = embedded_silicon();
    auto rows = parse_gemm_table(text_of(files, "gemm"), "data/silicon/gemm.csv");
    auto ceilings = parse_ceiling_table(text_of(files, "gemm_ceiling"), "data/silicon/gemm_ceiling.csv");
    SW_CHECK(rows.ok() && ceilings.ok(), "the embedded kernel tables must parse");
    const auto hopper = find_gpu("h100");  // the source silicon of both tables (H800: the H100 die, same clocks and HBM)
    std::vector<GemmRow> bf16_rows, fp8_rows;
    for (const auto& r : *rows) {
      if (r.dtype == "bf16" && r.silicon == "h100") bf16_rows.push_back(r);
      if (r.dtype == "fp8" && (r.silicon == "h100" || r.silicon == "h800")) fp8_rows.push_back(r);
    }
    if (!hopper || bf16_rows.empty() || fp8_rows.empty()) return s;
    const double hbm = hopper->hbm_bandwidth.value();
    // the floor from the bf16 table (its smallest GEMMs: 1-4,096 rows); one launch floor per silicon
    s.floor_s = gemm_floor(bf16_rows, hopper->bf16.value(), hbm, 2.0);
    s.bf16 = build_gemm_curve(bf16_rows, hopper->bf16.value(), hbm, 2.0, s.floor_s);
    s.fp8 = build_gemm_curve(fp8_rows, hopper->fp8.value(), hbm, 1.0, s.floor_s);
    s.ceilings = std::move(ceilings).value();
    s.ok = true;
    return s;
  }();
  return t;
}
}  // namespace

GemmProfile gemm_profile_for(const std::string& gpu_name) {
  GemmProfile p;
  const SourceTables& t = source_tables();
  if (!t.ok || !find_gpu(gpu_name)) return p;
  p.floor_s = t.floor_s;
  const auto ceiling = [&](const std::string& g, const char* d) -> double {
    for (const auto& c : t.ceilings) {
      if (c.gpu == g && c.dtype == d) return c.share;
    }
    return 0.0;
  };
  // the GPU whose measured ceiling stands for the target: its own, else its die's sibling
  const std::string me = gpu_name == "gb300" ? "b300" : gpu_name == "h20" ? "h100" : gpu_name;
  const bool hopper_die = gpu_name == "h100" || gpu_name == "h200" || gpu_name == "h20";
  const auto fill = [&](GemmFormatProfile& f, const GemmCurve& curve, const char* d, bool measured_here, const char* src_name) {
    f.curve = curve;
    const double mine = ceiling(me, d), theirs = ceiling("h100", d);
    if (measured_here) {
      f.basis = Basis::kMeasured;
    } else if (hopper_die) {
      f.basis = Basis::kTransferred;  // the same die at the same clocks
      if (mine > 0 && theirs > 0) f.ratio = mine / theirs;
    } else if (mine > 0 && theirs > 0) {
      f.basis = Basis::kTransferred;
      f.ratio = mine / theirs;
    } else if (const double mine16 = ceiling(me, "bf16"), theirs16 = ceiling("h100", "bf16"); mine16 > 0 && theirs16 > 0) {
      f.basis = Basis::kExtrapolated;  // this format's ceiling unmeasured here: the bf16 ratio
      f.ratio = mine16 / theirs16;
    } else {
      f.basis = Basis::kExtrapolated;  // no ceiling measured for this GPU: Hopper's curve as it is
    }
    f.source = fmt::format("{} ({} rows, {:.0f}-{:.0f} rows per GEMM){}", src_name, f.curve.rows, f.curve.m_lo, f.curve.m_hi,
                           f.ratio != 1.0 ? fmt::format(", x{:.3f} by the measured best-shape ceilings", f.ratio) : "");
  };
  fill(p.bf16, t.bf16, "bf16", gpu_name == "h100", "data/silicon/gemm.csv: h100 cuBLAS fp16 GEMMs (vidur)");
  fill(p.fp8, t.fp8, "fp8", false, "data/silicon/gemm.csv: h800 DeepGEMM fp8 GEMMs");
  p.fp4 = p.fp8;
  p.fp4.basis = Basis::kExtrapolated;  // no fp4 GEMM table: fp8's shares at fp4's peak
  p.present = true;
  return p;
}

}  // namespace shardwise
