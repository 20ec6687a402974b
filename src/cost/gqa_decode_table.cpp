#include "cost/gqa_decode_table.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace shardwise {

double GqaDecodeProfile::seconds(double bytes) const {
  // the time above the measured floor (launch and tail) scales with HBM; the floor does not
  const double t = curve.seconds_at(bytes);
  if (scale == 1.0) return t;
  return curve.t_lo + (t - curve.t_lo) * scale;
}

namespace {

// bytes per cached element of the formats a decode-attention row may state
double kv_element_bytes(const std::string& d) {
  if (d == "bf16" || d == "fp16") return 2.0;
  if (d == "fp8") return 1.0;
  return 0.0;
}

bool is_sdpa_kernel(const std::string& k) {
  std::string l;
  for (const char ch : k) l += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return l.find("sdpa") != std::string::npos;
}

Expected<std::int64_t> positive_int(const std::string& s, const std::string& file, int row, const char* column) {
  auto v = detail::positive_cell(s, file, row, column);
  if (!v) return v.error();
  if (*v != std::floor(*v) || *v > 1e15) return Error{file, fmt::format("row {} {}", row, column), "a positive whole number", "'" + s + "'"};
  return static_cast<std::int64_t>(*v);
}

}  // namespace

Expected<std::vector<AttentionKernelRow>> parse_attention_kernel_table(const std::string& text, const std::string& file) {
  auto t = detail::read_csv_table(text, file,
                                  {"silicon", "dtype", "kernel", "phase", "batch", "q_heads", "kv_heads", "head_dim", "q_len", "kv_len", "causal",
                                   "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<AttentionKernelRow> out;
  int row = 1;  // the header is row 1, as in the other tables
  for (const auto& c : *t) {
    ++row;
    const double eb = kv_element_bytes(c[1]);
    if (eb == 0) return Error{file, fmt::format("row {} dtype", row), "bf16, fp16 or fp8 (the KV cache's format)", "'" + c[1] + "'"};
    if (c[3] != "decode" && c[3] != "prefill") return Error{file, fmt::format("row {} phase", row), "decode or prefill", "'" + c[3] + "'"};
    if (c[10] != "0" && c[10] != "1") return Error{file, fmt::format("row {} causal", row), "0 or 1", "'" + c[10] + "'"};
    if (c[12] != "us") return Error{file, fmt::format("row {} unit", row), "us", "'" + c[12] + "'"};
    AttentionKernelRow r;
    const char* names[] = {"batch", "q_heads", "kv_heads", "head_dim", "q_len", "kv_len"};
    std::int64_t v[6] = {};
    for (int i = 0; i < 6; ++i) {
      auto x = positive_int(c[static_cast<std::size_t>(4 + i)], file, row, names[i]);
      if (!x) return x.error();
      v[i] = *x;
    }
    if (v[1] % v[2] != 0) {
      return Error{file, fmt::format("row {} kv_heads", row), fmt::format("a divisor of q_heads ({})", v[1]), "'" + c[6] + "'"};
    }
    auto us = detail::positive_cell(c[11], file, row, "value");
    if (!us) return us.error();
    // every row's GPU, here where the row number is the file's (a folder's rows are filtered below)
    if (!find_gpu(detail::source_key(c[0]))) {
      return Error{file, fmt::format("row {} silicon", row), "a GPU of the catalog (shardwise clusters)", "'" + c[0] + "'"};
    }
    if (c[3] != "decode" || v[4] != 1) continue;  // prefill and multi-token rows: checked, not used
    // torch SDPA's decode (measure.py without FlashInfer): checked and kept, not read: on Hopper it
    // does not share a KV head's reads among its query heads (docs/silicon.md), unlike the engines' kernels
    if (is_sdpa_kernel(c[2])) continue;
    r.silicon = c[0];
    r.dtype = c[1];
    r.kernel = c[2];
    r.batch = v[0];
    r.q_heads = v[1];
    r.kv_heads = v[2];
    r.head_dim = v[3];
    r.kv_len = v[5];
    r.bytes = 2.0 * static_cast<double>(r.batch) * static_cast<double>(r.kv_len) * static_cast<double>(r.kv_heads) * static_cast<double>(r.head_dim) * eb;
    r.seconds = *us * 1e-6;
    r.locator = c[13];
    out.push_back(std::move(r));
  }
  return out;
}

GqaDecodeProfile gqa_decode_profile_for(const GpuSpec& gpu, const SiliconTables& tables) {
  GqaDecodeProfile p;
  const auto rows_of = [&](const std::string& silicon) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& r : tables.attention_kernels) {
      if (detail::source_key(r.silicon) == silicon) pts.emplace_back(r.bytes, r.seconds);
    }
    return pts;
  };
  std::string source = detail::source_key(gpu.name);
  auto pts = rows_of(source);
  const bool own = !pts.empty();
  if (!own) {
    source = detail::architecture_sibling(gpu.name);
    if (source.empty()) return p;
    pts = rows_of(source);
  }
  const auto measured_on = find_gpu(source);
  if (pts.empty() || !measured_on || !(gpu.hbm_bandwidth.value() > 0)) return p;
  // rows of several shapes pooled by octave of bytes (decode attention reads its cache once:
  // its time follows the bytes, whatever the heads; docs/silicon.md)
  p.curve = build_time_curve(std::move(pts), /*bin_octaves=*/true);
  p.curve.basis = own ? Basis::kMeasured : Basis::kTransferred;
  p.scale = own ? 1.0 : measured_on->hbm_bandwidth.value() / gpu.hbm_bandwidth.value();
  p.present = true;
  const bool from_dir = std::find(tables.dir_attention_kernels.begin(), tables.dir_attention_kernels.end(), source) != tables.dir_attention_kernels.end();
  p.curve.source = fmt::format("{}: {} decode attention ({} rows, {:.3g}-{:.3g} B{})", from_dir ? tables.dir + "/attention.csv" : std::string("data/silicon/attention.csv"),
                               source, p.curve.rows, p.curve.b_lo, p.curve.b_hi,
                               own ? "" : fmt::format("; above the floor x{:.3f} by HBM bandwidth", p.scale));
  return p;
}

}  // namespace shardwise
