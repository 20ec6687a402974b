#include "cost/silicon.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include "core/embedded_data.hpp"
#include "core/fields.hpp"
#include "cost/allreduce_table.hpp"
#include "cost/attention_table.hpp"
#include "cost/elementwise_table.hpp"
#include "cost/gqa_decode_table.hpp"
#include "cost/layer_floor.hpp"
#include "cost/moe_comm_table.hpp"

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

using detail::median;

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

double GemmCurve::share_at(double m) const { return share_at_log(std::log(std::max(m, 1e-9))); }

double GemmCurve::share_at_log(double x) const {
  if (n == 0) return 1.0;
  if (!(x > log_m[0])) return share[0];  // at or below the first point (or not a number)
  // the first measured point at or beyond x: the count of points below it (at most 32, a
  // branch-free count the search's many GEMMs do not mispredict, where a binary search's
  // branches follow the row counts)
  std::size_t b = 0;
  for (int i = 0; i < n; ++i) b += log_m[static_cast<std::size_t>(i)] < x ? 1u : 0u;
  if (b == static_cast<std::size_t>(n)) return share[static_cast<std::size_t>(n - 1)];
  const std::size_t a = b - 1;
  const double t = (x - log_m[a]) / (log_m[b] - log_m[a]);
  return share[a] + t * (share[b] - share[a]);
}

const GemmFormatProfile& GemmProfile::routed_of(DType d) const {
  if (d == DType::kFp8 || d == DType::kInt8) return routed_fp8;
  if (d == DType::kFp4) return routed_fp4;
  return routed_bf16;
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

Expected<std::vector<GroupedRow>> parse_grouped_table(const std::string& text, const std::string& file) {
  auto t = read_table(text, file, {"silicon", "dtype", "kernel", "layout", "groups", "m_per_group", "m_padded", "N", "K", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<GroupedRow> out;
  int i = 1;
  for (const auto& c : *t) {
    ++i;
    GroupedRow r{c[0], c[1], c[2], c[3], 0, 0, 0, 0, 0, 0, c[11]};
    static constexpr std::pair<int, const char*> kCols[] = {{4, "groups"}, {5, "m_per_group"}, {6, "m_padded"}, {7, "N"}, {8, "K"}};
    double* dst[] = {&r.groups, &r.m, &r.m_padded, &r.n, &r.k};
    for (std::size_t j = 0; j < 5; ++j) {
      auto v = positive(c[static_cast<std::size_t>(kCols[j].first)], file, i, kCols[j].second);
      if (!v) return v.error();
      *dst[j] = *v;
    }
    if (r.m_padded < r.m) return Error{file, fmt::format("row {} m_padded", i), "at least m_per_group", "'" + c[6] + "'"};
    auto v = positive(c[9], file, i, "value");
    if (!v) return v.error();
    if (c[10] == "ms") {
      r.seconds = *v * 1e-3;
    } else if (c[10] == "us") {
      r.seconds = *v * 1e-6;
    } else if (c[10] == "TFLOPS") {
      r.seconds = 2.0 * r.groups * r.m * r.n * r.k / (*v * 1e12);
    } else {
      return Error{file, fmt::format("row {} unit", i), "ms, us or TFLOPS", "'" + c[10] + "'"};
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

namespace {
// A curve from (rows, roofline, time) points: at each rows the median share of the roofline.
template <class Row, class Roof>
GemmCurve curve_of(const std::vector<Row>& rows, double floor_s, Roof roof) {
  std::map<double, std::vector<double>> by_m;
  for (const auto& r : rows) {
    const double t = r.seconds - floor_s;
    if (t <= 0.1e-6) continue;  // a row the floor explains whole says nothing of the share
    by_m[r.m].push_back(std::min(1.0, roof(r) / t));
  }
  GemmCurve c;
  if (by_m.size() > static_cast<std::size_t>(GemmCurve::kMaxPoints)) {
    // more distinct row counts than a curve holds (a routed MoE table, whose rows per expert
    // are whatever the routing gave): binned at half octaves, each bin at the geometric
    // mean of its rows' counts and the median of their shares
    std::map<long, std::pair<std::vector<double>, std::vector<double>>> bins;  // bin -> (log m, shares)
    for (const auto& [m, shares] : by_m) {
      auto& b = bins[std::lround(2.0 * std::log2(m))];
      for (const double x : shares) {
        b.first.push_back(std::log(m));
        b.second.push_back(x);
      }
    }
    for (auto& [bin, b] : bins) {
      if (c.n == GemmCurve::kMaxPoints) break;
      const auto i = static_cast<std::size_t>(c.n++);
      double sum = 0;
      for (const double l : b.first) sum += l;
      c.log_m[i] = sum / static_cast<double>(b.first.size());
      c.share[i] = median(b.second);
      c.rows += static_cast<int>(b.second.size());
    }
    c.m_lo = by_m.begin()->first;
    c.m_hi = by_m.rbegin()->first;
    return c;
  }
  for (const auto& [m, shares] : by_m) {
    if (c.n == GemmCurve::kMaxPoints) break;
    const auto i = static_cast<std::size_t>(c.n++);
    c.log_m[i] = std::log(m);
    c.share[i] = median(shares);
    c.rows += static_cast<int>(shares.size());
    c.m_hi = m;
  }
  if (c.n > 0) c.m_lo = by_m.begin()->first;
  return c;
}
}  // namespace

GemmCurve build_gemm_curve(const std::vector<GemmRow>& rows, double peak, double hbm, double bpw, double floor_s) {
  return curve_of(rows, floor_s, [&](const GemmRow& r) { return roofline(r, peak, hbm, bpw); });
}

GemmCurve build_grouped_curve(const std::vector<GroupedRow>& rows, double peak, double hbm, double bpw, double floor_s) {
  return curve_of(rows, floor_s, [&](const GroupedRow& r) {
    const double flops = 2.0 * r.groups * r.m * r.n * r.k;
    const double bytes = bpw * r.groups * (r.m * r.k + r.n * r.k) + 2.0 * r.groups * r.m * r.n;
    return std::max(flops / peak, bytes / hbm);
  });
}

double gemm_floor(const std::vector<GemmRow>& rows, double peak, double hbm, double bpw) {
  double fl = 1e300;
  for (const auto& r : rows) fl = std::min(fl, r.seconds - roofline(r, peak, hbm, bpw));
  return rows.empty() ? 0.0 : std::max(0.0, fl);
}

namespace {
// The catalog GPU whose curves a row's silicon feeds: an H800 is the H100 die at the same
// clocks and HBM (only its NVLink differs), so its GEMMs count as the H100's.
using detail::source_key;
bool is_fp8(const std::string& d) { return d == "fp8" || d == "int8"; }
bool is_bf16(const std::string& d) { return d == "bf16" || d == "fp16"; }
bool is_fp4(const std::string& d) { return d == "fp4"; }
// A table's tensor-core format: its rows' dtypes, peak and bytes per element (fp4: NVFP4's
// 4 bits + one fp8 scale per 16 elements, 0.5625 B; MXFP4's 0.53 B is within 6% of it)
enum class Fmt { kBf16, kFp8, kFp4 };
bool of_format(const std::string& d, Fmt f) { return f == Fmt::kFp8 ? is_fp8(d) : f == Fmt::kFp4 ? is_fp4(d) : is_bf16(d); }
const char* format_name(Fmt f) { return f == Fmt::kFp8 ? "fp8" : f == Fmt::kFp4 ? "fp4" : "bf16"; }
double format_peak(const GpuSpec& g, Fmt f) { return f == Fmt::kFp8 ? g.fp8.value() : f == Fmt::kFp4 ? g.fp4.value() : g.bf16.value(); }
double format_bytes(Fmt f) { return f == Fmt::kFp8 ? 1.0 : f == Fmt::kFp4 ? 0.5625 : 2.0; }

template <class Row>
SiliconTables::Curve format_curve(const std::vector<Row>& rows, const std::string& key, Fmt fmt, const std::string& file,
                                  const SiliconTables& t, const GpuSpec& gpu, double floor_s, bool grouped, bool routed = false) {
  const auto& mine_keys = grouped ? t.dir_grouped : t.dir_gemm;
  const std::string dir_key = key + "/" + format_name(fmt) + (routed ? "/routed" : "");
  const bool from_dir = std::find(mine_keys.begin(), mine_keys.end(), dir_key) != mine_keys.end();
  const std::string origin = from_dir ? t.dir : std::string("data/silicon");
  std::vector<Row> mine;
  SiliconTables::Curve out;
  std::map<std::string, int> kernels;
  for (const auto& r : rows) {
    if (source_key(r.silicon) != key || !of_format(r.dtype, fmt)) continue;
    if constexpr (std::is_same_v<Row, GroupedRow>) {
      if ((r.layout == "routed") != routed) continue;  // the engines' fused MoE has curves of its own
    }
    mine.push_back(r);
    if (std::find(out.silicon.begin(), out.silicon.end(), r.silicon) == out.silicon.end()) out.silicon.push_back(r.silicon);
    ++kernels[r.kernel];
  }
  if (mine.empty()) return out;
  const double peak = format_peak(gpu, fmt), hbm = gpu.hbm_bandwidth.value(), bpw = format_bytes(fmt);
  if constexpr (std::is_same_v<Row, GroupedRow>) {
    out.curve = build_grouped_curve(mine, peak, hbm, bpw, floor_s);
    // the engines' fused MoE: each measured GEMM's own curve as well, by its role (the kernel
    // text says: "... up, ..." / "... down, ..." in the Triton rows, "stage 1" / "stage 2" in
    // AITER's) and shape; two row counts or more; rows of no stated role only pooled
    if (routed) {
      std::map<std::tuple<bool, double, double>, std::vector<Row>> by_shape;
      for (const auto& r : mine) {
        const bool up = r.kernel.find(" up, ") != std::string::npos || r.kernel.find("stage 1") != std::string::npos;
        const bool down = r.kernel.find(" down, ") != std::string::npos || r.kernel.find("stage 2") != std::string::npos;
        if (up != down) by_shape[{up, r.n, r.k}].push_back(r);
      }
      for (const auto& [role_shape, rs] : by_shape) {
        const auto& [up, n, k] = role_shape;
        ShapeCurve sc{up, n, k, build_grouped_curve(rs, peak, hbm, bpw, floor_s), ""};
        if (sc.curve.n < 2) continue;
        sc.source = fmt::format("{} GEMM N {:.0f} x K {:.0f} alone ({} rows, {:.0f}-{:.0f} per expert)", up ? "up" : "down", n, k, sc.curve.rows,
                                sc.curve.m_lo, sc.curve.m_hi);
        out.shapes.push_back(std::move(sc));
      }
    }
  } else {
    out.curve = build_gemm_curve(mine, peak, hbm, bpw, floor_s);
  }
  std::string who, what;
  for (const auto& s : out.silicon) who += (who.empty() ? "" : "+") + s;
  for (const auto& [k, n] : kernels) what += fmt::format("{}{} x{}", what.empty() ? "" : ", ", k, n);
  // one kernel, a name per shape: vLLM's Triton fused MoE, or AITER's on AMD
  if (routed) {
    const bool aiter = mine.front().kernel.rfind("AITER", 0) == 0;
    what = fmt::format("the engines' {} fused MoE x{}", aiter ? "AITER" : "Triton", mine.size());
  }
  out.source = fmt::format("{}/{}: {} {} {}GEMMs ({}; {:.0f}-{:.0f} rows{})", origin, file, who, format_name(fmt),
                           routed ? "routed expert " : grouped ? "grouped " : "", what, out.curve.m_lo, out.curve.m_hi,
                           grouped ? " per expert" : " per GEMM");
  return out;
}

std::string text_of_embedded(const char* name) { return text_of(embedded_silicon(), name); }
}  // namespace

namespace detail {
Expected<std::vector<std::vector<std::string>>> read_csv_table(const std::string& text, const std::string& file,
                                                               const std::vector<std::string>& header) {
  return read_table(text, file, header);
}
Expected<double> positive_cell(const std::string& s, const std::string& file, int row, const char* column) {
  return positive(s, file, row, column);
}
std::string embedded_silicon_text(const char* name) { return text_of_embedded(name); }
std::string source_key(const std::string& silicon) { return silicon == "h800" ? "h100" : silicon; }
std::string architecture_sibling(const std::string& gpu) {
  if (gpu == "h200" || gpu == "h20" || gpu == "h800") return "h100";
  if (gpu == "gb200" || gpu == "b300" || gpu == "gb300") return "b200";
  return "";
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace detail

double measured_share_ratio(const std::vector<GemmRow>& rows, const std::string& gpu, const std::string& format) {
  const auto me = find_gpu(gpu), ref = find_gpu("h100");
  if (!me || !ref) return 0.0;
  if (format != "fp8" && format != "bf16") return 0.0;
  const bool fp8 = format == "fp8";
  const double my_peak = fp8 ? me->fp8.value() : me->bf16.value(), ref_peak = fp8 ? ref->fp8.value() : ref->bf16.value();
  if (!(my_peak > 0) || !(ref_peak > 0)) return 0.0;
  // each shape's seconds on either side: the fastest of its rows (what an engine would run)
  std::map<std::array<double, 3>, std::pair<std::vector<double>, std::vector<double>>> shapes;
  for (const GemmRow& r : rows) {
    if (r.m < kShareMinRows || (fp8 ? !is_fp8(r.dtype) : !is_bf16(r.dtype))) continue;
    if (r.silicon == gpu) shapes[{r.m, r.n, r.k}].first.push_back(r.seconds);
    if (r.silicon == "h100") shapes[{r.m, r.n, r.k}].second.push_back(r.seconds);
  }
  std::vector<double> ratios;
  for (const auto& [shape, t] : shapes) {
    if (t.first.empty() || t.second.empty()) continue;
    ratios.push_back(*std::min_element(t.second.begin(), t.second.end()) / *std::min_element(t.first.begin(), t.first.end()) * ref_peak /
                     my_peak);
  }
  return static_cast<int>(ratios.size()) >= kShareMinShapes ? detail::median(ratios) : 0.0;
}

const SiliconTables::Source* SiliconTables::source(const std::string& gpu) const {
  for (const auto& [k, s] : sources) {
    if (k == gpu) return &s;
  }
  return nullptr;
}

Expected<SiliconTables> make_silicon_tables(SiliconTables t) {
  t.sources.clear();
  std::vector<std::string> keys;
  const auto add_key = [&](const std::string& silicon, const char* file, std::size_t row) -> std::optional<Error> {
    const std::string k = source_key(silicon);
    if (!find_gpu(k)) return Error{file, fmt::format("row {} silicon", row + 2), "a GPU of the catalog (shardwise clusters)", "'" + silicon + "'"};
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    return std::nullopt;
  };
  for (std::size_t i = 0; i < t.gemm.size(); ++i) {
    if (auto e = add_key(t.gemm[i].silicon, "gemm.csv", i)) return *e;
  }
  for (std::size_t i = 0; i < t.grouped.size(); ++i) {
    if (auto e = add_key(t.grouped[i].silicon, "grouped_gemm.csv", i)) return *e;
  }
  for (std::size_t i = 0; i < t.carry.size(); ++i) {
    if (auto e = add_key(t.carry[i].silicon, "gemm_carry.csv", i)) return *e;
  }
  // what the share ratios read: the tables' dense rows and the carry rows of every GPU but the
  // H100, and the reference H100 rows (the built-in ones, whatever a folder replaced)
  std::vector<GemmRow> dense;
  for (const auto* v : {&t.gemm, &t.carry}) {
    for (const GemmRow& r : *v) {
      if (r.silicon != "h100" || t.share_reference.empty()) dense.push_back(r);
    }
  }
  dense.insert(dense.end(), t.share_reference.begin(), t.share_reference.end());
  for (const auto& k : keys) {
    const auto gpu = find_gpu(k);
    SiliconTables::Source s;
    // the floor from this silicon's dense rows (bf16, else fp8): one launch floor per silicon
    std::vector<GemmRow> dense16, dense8;
    for (const auto& r : t.gemm) {
      if (source_key(r.silicon) != k) continue;
      if (is_bf16(r.dtype)) dense16.push_back(r);
      if (is_fp8(r.dtype)) dense8.push_back(r);
    }
    const double hbm = gpu->hbm_bandwidth.value();
    s.floor_s = !dense16.empty() ? gemm_floor(dense16, gpu->bf16.value(), hbm, 2.0)
                : !dense8.empty() ? gemm_floor(dense8, gpu->fp8.value(), hbm, 1.0)
                                  : 0.0;
    if (dense16.empty() && dense8.empty()) {
      if (const auto* h = t.source("h100")) s.floor_s = h->floor_s;  // no bf16/fp8 dense rows (grouped or fp4 alone): Hopper's floor
    }
    s.bf16 = format_curve(t.gemm, k, Fmt::kBf16, "gemm.csv", t, *gpu, s.floor_s, false);
    s.fp8 = format_curve(t.gemm, k, Fmt::kFp8, "gemm.csv", t, *gpu, s.floor_s, false);
    s.fp4 = format_curve(t.gemm, k, Fmt::kFp4, "gemm.csv", t, *gpu, s.floor_s, false);
    s.grouped_bf16 = format_curve(t.grouped, k, Fmt::kBf16, "grouped_gemm.csv", t, *gpu, s.floor_s, true);
    s.grouped_fp8 = format_curve(t.grouped, k, Fmt::kFp8, "grouped_gemm.csv", t, *gpu, s.floor_s, true);
    s.routed_bf16 = format_curve(t.grouped, k, Fmt::kBf16, "grouped_gemm.csv", t, *gpu, s.floor_s, true, true);
    s.routed_fp8 = format_curve(t.grouped, k, Fmt::kFp8, "grouped_gemm.csv", t, *gpu, s.floor_s, true, true);
    if (k != "h100") {  // the H100 is the reference (its ratio is 1 by definition)
      s.share_ratio_bf16 = measured_share_ratio(dense, k, "bf16");
      s.share_ratio_fp8 = measured_share_ratio(dense, k, "fp8");
    }
    if (k == "h100") {
      t.sources.insert(t.sources.begin(), {k, std::move(s)});
    } else {
      t.sources.emplace_back(k, std::move(s));
    }
  }
  return t;
}

const SiliconTables& builtin_silicon() {
  // constants derived from constants (thread-safe static initialisation), never modified
  static const SiliconTables t = [] {
    SiliconTables s;
    auto rows = parse_gemm_table(text_of_embedded("gemm"), "data/silicon/gemm.csv");
    auto carry = parse_gemm_table(text_of_embedded("gemm_carry"), "data/silicon/gemm_carry.csv");
    auto ceilings = parse_ceiling_table(text_of_embedded("gemm_ceiling"), "data/silicon/gemm_ceiling.csv");
    auto grouped = parse_grouped_table(text_of_embedded("grouped_gemm"), "data/silicon/grouped_gemm.csv");
    auto allreduce = parse_allreduce_table(text_of_embedded("allreduce"), "data/silicon/allreduce.csv");
    auto elementwise = parse_elementwise_table(text_of_embedded("elementwise"), "data/silicon/elementwise.csv");
    auto attention = parse_attention_table(text_of_embedded("mla_decode"), "data/silicon/mla_decode.csv");
    auto moe_comm = parse_moe_comm_table(text_of_embedded("moe_comm"), "data/silicon/moe_comm.csv");
    auto kernels = parse_attention_kernel_table(text_of_embedded("attention"), "data/silicon/attention.csv");
    auto prefill = parse_prefill_ceiling_table(text_of_embedded("attention_prefill"), "data/silicon/attention_prefill.csv");
    auto layer_kernels = parse_layer_kernel_table(text_of_embedded("layer_kernels"), "data/silicon/layer_kernels.csv");
    for (const Error* e : {rows.ok() ? nullptr : &rows.error(), carry.ok() ? nullptr : &carry.error(), ceilings.ok() ? nullptr : &ceilings.error(),
                           grouped.ok() ? nullptr : &grouped.error(),
                           allreduce.ok() ? nullptr : &allreduce.error(), elementwise.ok() ? nullptr : &elementwise.error(),
                           attention.ok() ? nullptr : &attention.error(), moe_comm.ok() ? nullptr : &moe_comm.error(),
                           kernels.ok() ? nullptr : &kernels.error(), prefill.ok() ? nullptr : &prefill.error(),
                           layer_kernels.ok() ? nullptr : &layer_kernels.error()}) {
      if (e) {
        const std::string why = "the embedded kernel tables must parse: " + e->message();
        SW_CHECK(false, why.c_str());
      }
    }
    s.gemm = std::move(rows).value();
    s.carry = std::move(carry).value();
    for (const GemmRow& r : s.gemm) {
      if (r.silicon == "h100") s.share_reference.push_back(r);
    }
    s.ceilings = std::move(ceilings).value();
    s.grouped = std::move(grouped).value();
    s.allreduce = std::move(allreduce).value();
    s.elementwise = std::move(elementwise).value();
    s.attention = std::move(attention).value();
    s.moe_comm = std::move(moe_comm).value();
    s.attention_kernels = std::move(kernels).value();
    s.prefill_ceilings = std::move(prefill).value();
    s.layer_kernels = std::move(layer_kernels).value();
    auto built = make_silicon_tables(std::move(s));
    SW_CHECK(built.ok(), "the embedded kernel tables must name catalog GPUs");
    return std::move(built).value();
  }();
  return t;
}

Expected<SiliconTables> load_silicon_dir(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return Error{flag, "", "a folder of kernel tables (bench/silicon/measure.py --out)", "'" + dir + "'"};
  SiliconTables t = builtin_silicon();
  t.dir = dir;
  bool any = false;
  const auto fmt_of = [](const std::string& d) { return is_fp8(d) ? std::string("fp8") : is_bf16(d) ? std::string("bf16") : d; };  // fp4 stays "fp4"
  // One file of the folder, where present: parsed, every row's GPU checked against the
  // catalog (numbered as in the file), and its rows put in place of the built-in rows of each
  // (GPU, format) it holds; `keys` records those pairs (what --explain attributes to the folder).
  const auto read_one = [&](const char* name, auto parse, auto& builtin, auto key, auto silicon,
                            std::vector<std::string>* keys) -> std::optional<Error> {
    const std::string file = (fs::path(dir) / name).string();
    if (!fs::exists(file, ec)) return std::nullopt;
    auto text = read_text_file(file);
    if (!text) return text.error();
    auto rows = parse(*text, file);
    if (!rows) return rows.error();
    std::vector<std::string> theirs;
    for (std::size_t i = 0; i < rows->size(); ++i) {
      const auto& r = (*rows)[i];
      if (const std::string g = silicon(r); !g.empty() && !find_gpu(source_key(g))) {
        return Error{file, fmt::format("row {} silicon", i + 2), "a GPU of the catalog (shardwise clusters)", "'" + g + "'"};
      }
      theirs.push_back(key(r));
    }
    std::erase_if(builtin, [&](const auto& r) { return std::find(theirs.begin(), theirs.end(), key(r)) != theirs.end(); });
    builtin.insert(builtin.end(), std::make_move_iterator(rows->begin()), std::make_move_iterator(rows->end()));
    if (keys) keys->insert(keys->end(), theirs.begin(), theirs.end());
    any = true;
    return std::nullopt;
  };
  if (auto e = read_one("gemm.csv", parse_gemm_table, t.gemm, [&](const GemmRow& r) { return source_key(r.silicon) + "/" + fmt_of(r.dtype); },
                        [](const GemmRow& r) { return r.silicon; }, &t.dir_gemm)) {
    return *e;
  }
  // a GPU and format the folder measures: its own rows carry it, not the built-in carry rows
  std::erase_if(t.carry, [&](const GemmRow& r) {
    return std::find(t.dir_gemm.begin(), t.dir_gemm.end(), source_key(r.silicon) + "/" + fmt_of(r.dtype)) != t.dir_gemm.end();
  });
  // grouped rows replace by (GPU, format, routed or not): measuring torch's grouped GEMMs
  // keeps the built-in rows of the engines' fused MoE, and the other way round
  const auto grouped_key = [&](const GroupedRow& r) {
    return source_key(r.silicon) + "/" + fmt_of(r.dtype) + (r.layout == "routed" ? "/routed" : "");
  };
  for (const char* file : {"grouped_gemm.csv", "fused_moe.csv"}) {  // fused_moe.csv: measure.py --only fused_moe
    if (auto e = read_one(file, parse_grouped_table, t.grouped, grouped_key, [](const GroupedRow& r) { return r.silicon; }, &t.dir_grouped)) {
      return *e;
    }
  }
  // ceilings name their GPU in `gpu` and are not checked against the catalog (an unknown one is never looked up)
  if (auto e = read_one("gemm_ceiling.csv", parse_ceiling_table, t.ceilings, [](const CeilingRow& r) { return r.gpu + "/" + r.dtype; },
                        [](const CeilingRow&) { return std::string(); }, nullptr)) {
    return *e;
  }
  // all-reduce rows replace the built-in ones of each (GPU, group size, engine kernel or not)
  // they measure; their GPU is a catalog GPU as named (an H800's NVLink is not an H100's);
  // dir_allreduce: the (GPU, group size) curves the folder gave (what --explain attributes to it)
  if (const std::string file = (fs::path(dir) / "allreduce.csv").string(); fs::exists(file, ec)) {
    auto text = read_text_file(file);
    if (!text) return text.error();
    auto rows = parse_allreduce_table(*text, file);
    if (!rows) return rows.error();
    const auto key = [](const AllReduceRow& r) { return r.silicon + "/" + std::to_string(r.group) + (is_engine_allreduce(r) ? "/engine" : "/other"); };
    std::vector<std::string> theirs;
    for (std::size_t i = 0; i < rows->size(); ++i) {
      const AllReduceRow& r = (*rows)[i];
      if (!find_gpu(r.silicon)) return Error{file, fmt::format("row {} silicon", i + 2), "a GPU of the catalog (shardwise clusters)", "'" + r.silicon + "'"};
      theirs.push_back(key(r));
      const std::string curve = r.silicon + "/" + std::to_string(r.group) + (is_nccl_allreduce(r) ? "/nccl" : "");
      if ((is_engine_allreduce(r) || is_nccl_allreduce(r)) && std::find(t.dir_allreduce.begin(), t.dir_allreduce.end(), curve) == t.dir_allreduce.end()) {
        t.dir_allreduce.push_back(curve);
      }
    }
    std::erase_if(t.allreduce, [&](const AllReduceRow& r) { return std::find(theirs.begin(), theirs.end(), key(r)) != theirs.end(); });
    t.allreduce.insert(t.allreduce.end(), rows->begin(), rows->end());
    any = true;
  }
  // elementwise rows replace the built-in ones of each (GPU, op) they measure
  if (auto e = read_one("elementwise.csv", parse_elementwise_table, t.elementwise, [&](const ElementwiseRow& r) { return source_key(r.silicon) + "/" + r.op; },
                        [](const ElementwiseRow& r) { return r.silicon; }, &t.dir_elementwise)) {
    return *e;
  }
  // attention ceilings replace the built-in ones of each (GPU, metric) they state
  if (auto e = read_one("mla_decode.csv", parse_attention_table, t.attention, [](const AttentionRow& r) { return source_key(r.silicon) + "/" + r.metric; },
                        [](const AttentionRow& r) { return r.silicon; }, &t.dir_attention)) {
    return *e;
  }
  // decode-attention rows (measure.py's attention.csv) replace the built-in ones of each GPU they measure
  if (auto e = read_one("attention.csv", parse_attention_kernel_table, t.attention_kernels, [](const AttentionKernelRow& r) { return source_key(r.silicon); },
                        [](const AttentionKernelRow& r) { return r.silicon; }, &t.dir_attention_kernels)) {
    return *e;
  }
  // prefill-attention ceilings replace the built-in ones of each (GPU, format) they state
  if (auto e = read_one("attention_prefill.csv", parse_prefill_ceiling_table, t.prefill_ceilings,
                        [](const PrefillCeilingRow& r) { return source_key(r.silicon) + "/" + r.dtype; }, [](const PrefillCeilingRow& r) { return r.silicon; },
                        &t.dir_prefill)) {
    return *e;
  }
  // dispatch and combine rows replace the built-in ones of each (GPU, kernel family) they measure
  if (auto e = read_one("moe_comm.csv", parse_moe_comm_table, t.moe_comm, [](const MoeCommRow& r) { return r.silicon + "/" + r.family; },
                        [](const MoeCommRow& r) { return r.silicon; }, &t.dir_moe_comm)) {
    return *e;
  }
  if (!any) {
    return Error{flag, "", "a folder holding gemm.csv, grouped_gemm.csv, fused_moe.csv, gemm_ceiling.csv, allreduce.csv, elementwise.csv, mla_decode.csv, attention.csv, attention_prefill.csv or moe_comm.csv",
                 "'" + dir + "'"};
  }
  return make_silicon_tables(std::move(t));
}

GemmProfile gemm_profile_for(const std::string& gpu_name) { return gemm_profile_for(gpu_name, builtin_silicon()); }

GemmProfile gemm_profile_for(const std::string& gpu_name, const SiliconTables& t) {
  GemmProfile p;
  const SiliconTables::Source* hopper = t.source("h100");
  if (!hopper || !find_gpu(gpu_name) || hopper->bf16.curve.n == 0) return p;
  const SiliconTables::Source* own = t.source(source_key(gpu_name));
  p.floor_s = own && own->floor_s > 0 ? own->floor_s : hopper->floor_s;
  const auto ceiling = [&](const std::string& g, const char* d) -> double {
    for (const auto& c : t.ceilings) {
      if (c.gpu == g && c.dtype == d) return c.share;
    }
    return 0.0;
  };
  // the GPU whose measured ceiling stands for the target: its own, else its die's sibling
  const std::string me = gpu_name == "gb300" ? "b300" : gpu_name == "h20" ? "h100" : gpu_name == "a100-40gb" ? "a100" : gpu_name;
  const bool hopper_die = gpu_name == "h100" || gpu_name == "h200" || gpu_name == "h20";
  const bool blackwell = gpu_name == "b200" || gpu_name == "gb200" || gpu_name == "b300" || gpu_name == "gb300";
  // the share this GPU's GEMMs reach at the engines' shapes over the H100's (measured_share_ratio):
  // its own rows', else its architecture sibling's carried by the two chips' best-shape ceilings
  // (GB200, B300 and GB300 from the B200's), else 0 (unmeasured)
  const auto share = [&](const std::string& g, const char* d) -> double {
    const SiliconTables::Source* s = t.source(source_key(g));
    return !s ? 0.0 : std::string(d) == "fp8" ? s->share_ratio_fp8 : s->share_ratio_bf16;
  };
  const std::string sibling = detail::architecture_sibling(gpu_name);
  const auto shape_share = [&](const char* d) -> double {
    // the GPU's own rows (a folder's GB300, H20 or A100-40GB rows), else its stand-in's
    if (const double own_share = share(gpu_name, d); own_share > 0) return own_share;
    if (const double own_share = share(me, d); own_share > 0) return own_share;
    const double sib = sibling.empty() ? 0.0 : share(sibling, d);
    const double mine_c = ceiling(me, d), sib_c = ceiling(sibling, d);
    return sib > 0 && mine_c > 0 && sib_c > 0 ? sib * mine_c / sib_c : 0.0;
  };
  using Member = SiliconTables::Curve SiliconTables::Source::*;
  const auto fill = [&](GemmFormatProfile& f, Member member, const char* d) {
    // what carries the fitted efficiency and the H100's curves here: the share measured at the
    // engines' shapes where it is (docs/silicon.md, "Carrying GEMM efficiency between GPUs"),
    // else the measured best-shape ceilings, this GPU's over the H100's
    const double mine_c = ceiling(me, d), theirs = ceiling("h100", d);
    Basis carried = Basis::kExtrapolated;  // no ceiling measured for this GPU: Hopper's curve as it is
    const char* by = "the measured best-shape ceilings";
    if (const double at_shapes = shape_share(d); at_shapes > 0) {
      carried = Basis::kTransferred;
      f.ceiling_ratio = at_shapes;
      by = "the shares measured at the engines' shapes";
    } else if (const double at16 = shape_share("bf16"); at16 > 0) {
      carried = Basis::kTransferred;
      f.ceiling_ratio = at16;  // this format unmeasured at those shapes: bf16's share there
      by = "the shares measured at the engines' shapes (bf16's)";
    } else if (hopper_die) {
      carried = Basis::kTransferred;  // the same die at the same clocks
      if (mine_c > 0 && theirs > 0) f.ceiling_ratio = mine_c / theirs;
    } else if (mine_c > 0 && theirs > 0) {
      carried = Basis::kTransferred;
      f.ceiling_ratio = mine_c / theirs;
    } else if (const double mine16 = ceiling(me, "bf16"), theirs16 = ceiling("h100", "bf16"); mine16 > 0 && theirs16 > 0) {
      f.ceiling_ratio = mine16 / theirs16;  // this format's ceiling unmeasured here: the bf16 ratio
    }
    const SiliconTables::Curve* mine = own ? &(own->*member) : nullptr;
    if (mine && mine->curve.n > 0) {  // this GPU's own rows (an H800's for the H100: the same die)
      f.curve = mine->curve;
      f.shapes = mine->shapes;
      const bool here = std::find(mine->silicon.begin(), mine->silicon.end(), gpu_name) != mine->silicon.end();
      f.basis = here ? Basis::kMeasured : Basis::kTransferred;
      f.source = mine->source;
      return;
    }
    const SiliconTables::Curve& src = hopper->*member;
    if (src.curve.n == 0) return;  // no table of this kind: the model
    f.curve = src.curve;
    f.shapes = src.shapes;
    f.basis = carried;
    f.ratio = f.ceiling_ratio;
    f.source = src.source + (f.ratio != 1.0 ? fmt::format(", x{:.3f} by {}", f.ratio, by) : "");
  };
  fill(p.bf16, &SiliconTables::Source::bf16, "bf16");
  fill(p.fp8, &SiliconTables::Source::fp8, "fp8");
  fill(p.grouped_bf16, &SiliconTables::Source::grouped_bf16, "bf16");
  fill(p.grouped_fp8, &SiliconTables::Source::grouped_fp8, "fp8");
  // the engines' fused MoE: its own rows, else an H100's on a Hopper die (the same SMs and
  // clocks; the H200's HBM is faster, which the roofline's bandwidth carries), else on a
  // Blackwell die the same kernel's H100 rows at the Blackwell's measured share ratio, marked
  // extrapolated (vLLM and SGLang run the Triton fused_moe_kernel there too for bf16 and fp8
  // experts; no Blackwell row measures it, and the fitted expert stream it would otherwise fall
  // to is TensorRT-LLM's, which made a B200 decode vLLM's MoE slower than an H200: docs/
  // silicon.md, "The engines' fused MoE"). Never the Triton rows on AMD (carried there, Mixtral's
  // Offline run 319 went from 36% too fast to 27% too slow): its engines run AITER's fused MoE,
  // measured by AITER's own tuner on the MI300X (bf16) and the MI325X (fp8), read as a GPU's
  // own rows, else as its die twin's (CDNA3, 304 CUs at the
  // same spec: transferred; the HBM each chip's roofline carries, the compute their measured
  // best-shape bf16 ceilings, the MI325X's 60.4% of spec against the MI300X's 51.4%: its higher
  // power holds its clocks)
  const std::string die_twin = gpu_name == "mi300x" ? "mi325x" : gpu_name == "mi325x" ? "mi300x" : "";
  const SiliconTables::Source* twin = die_twin.empty() ? nullptr : t.source(die_twin);
  const double twin_ratio = twin && ceiling(gpu_name, "bf16") > 0 && ceiling(die_twin, "bf16") > 0 ? ceiling(gpu_name, "bf16") / ceiling(die_twin, "bf16") : 1.0;
  const auto fill_routed = [&](GemmFormatProfile& f, Member member, const char* d) {
    if (hopper_die || (own && (own->*member).curve.n > 0)) {
      fill(f, member, d);
    } else if (blackwell) {
      fill(f, member, d);
      if (f.curve.n > 0) f.basis = Basis::kExtrapolated;
      // a shape's own rows are the kernel's behaviour on the die that ran it (its tile choice at
      // a few rows): carried to another architecture, the curve pooled over the shapes alone
      f.shapes.clear();
    } else if (twin && (twin->*member).curve.n > 0) {
      f.curve = (twin->*member).curve;
      f.shapes = (twin->*member).shapes;
      f.basis = Basis::kTransferred;
      f.ratio = twin_ratio;
      f.source = fmt::format("{} (on the {}: the same die; compute x{:.3f} by the measured best-shape ceilings)", (twin->*member).source, die_twin, twin_ratio);
    }
  };
  fill_routed(p.routed_bf16, &SiliconTables::Source::routed_bf16, "bf16");
  fill_routed(p.routed_fp8, &SiliconTables::Source::routed_fp8, "fp8");
  // fp4: the Blackwell die's own rows (B200's; the GB200 is the same die: transferred, carried
  // by the two chips' fp8 ceilings as no fp4 ceiling of its own is measured; B300/GB300 have
  // another fp4 unit: B200's shares at their peak, extrapolated), else fp8's curve at fp4's
  // peak (extrapolated). The fp4 ceiling over the H100's fp8 one carries the fitted model.
  const SiliconTables::Source* die4 = blackwell ? t.source("b200") : nullptr;
  const double own4 = ceiling(me, "fp4"), b200_4 = ceiling("b200", "fp4"), h100_8 = ceiling("h100", "fp8");
  double fp4_ceiling = own4;  // this GPU's fp4 best-shape share of its fp4 spec
  // a Blackwell without its own: the B200's fp4 ceiling scaled by the two chips' fp8 ceilings
  if (fp4_ceiling <= 0 && blackwell && b200_4 > 0) {
    const double mine8 = ceiling(me, "fp8"), b200_8 = ceiling("b200", "fp8");
    fp4_ceiling = mine8 > 0 && b200_8 > 0 ? b200_4 * mine8 / b200_8 : b200_4;
  }
  if (own && own->fp4.curve.n > 0) {
    p.fp4.curve = own->fp4.curve;
    p.fp4.basis = std::find(own->fp4.silicon.begin(), own->fp4.silicon.end(), gpu_name) != own->fp4.silicon.end() ? Basis::kMeasured : Basis::kTransferred;
    p.fp4.source = own->fp4.source;
  } else if (die4 && die4->fp4.curve.n > 0) {
    p.fp4.curve = die4->fp4.curve;
    p.fp4.basis = gpu_name == "gb200" ? Basis::kTransferred : Basis::kExtrapolated;
    p.fp4.ratio = fp4_ceiling > 0 && b200_4 > 0 ? fp4_ceiling / b200_4 : 1.0;
    p.fp4.source = die4->fp4.source + (p.fp4.ratio != 1.0 ? fmt::format(", x{:.3f} by the measured best-shape ceilings", p.fp4.ratio) : "");
  } else {
    p.fp4 = p.fp8;
    p.fp4.basis = Basis::kExtrapolated;  // no fp4 GEMM table: fp8's shares at fp4's peak
  }
  // the fp4 ceiling over the H100's fp8 one carries the fitted model; where fp8 is carried by the
  // shares measured at the engines' shapes, fp4 takes the same discount: its best-shape ceiling
  // over this GPU's fp8 best-shape ceiling, times fp8's measured share ratio
  const double mine8 = ceiling(me, "fp8");
  if (const double at_shapes = shape_share("fp8"); at_shapes > 0 && fp4_ceiling > 0) {
    // (no fp8 best-shape ceiling to take the fp4 one against: fp8's share as it is)
    p.fp4.ceiling_ratio = mine8 > 0 ? fp4_ceiling / mine8 * at_shapes : at_shapes;
  } else {
    p.fp4.ceiling_ratio = fp4_ceiling > 0 && h100_8 > 0 ? fp4_ceiling / h100_8 : p.fp8.ceiling_ratio;
  }
  p.grouped_fp4 = p.grouped_fp8;
  if (p.grouped_fp4.curve.n > 0) p.grouped_fp4.basis = Basis::kExtrapolated;
  // the engines' fp4 MoE on Blackwell (vLLM's and SGLang's FlashInfer kernels): the fused MoE's
  // shares by copies per touched expert (its weight stream, in fewer bytes), computing at the
  // fp4 peak at fp4's ceiling ratio; so fp4 experts never decode slower than fp8 ones
  if (blackwell && p.routed_fp8.curve.n > 0) {
    p.routed_fp4 = p.routed_fp8;
    p.routed_fp4.ratio = p.fp4.ceiling_ratio;
    p.routed_fp4.basis = Basis::kExtrapolated;
    p.routed_fp4.source = fmt::format("{} (read for fp4 experts at the fp4 ceiling ratio x{:.3f})", p.routed_fp8.source, p.routed_fp4.ratio);
  }
  p.present = true;
  return p;
}

}  // namespace shardwise
