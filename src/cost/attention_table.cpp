#include "cost/attention_table.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace shardwise {

Expected<std::vector<AttentionRow>> parse_attention_table(const std::string& text, const std::string& file) {
  auto t = detail::read_csv_table(text, file, {"silicon", "kernel", "phase", "metric", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<AttentionRow> out;
  int row = 1;  // the header is row 1, as in the other tables
  for (const auto& c : *t) {
    ++row;
    if (c[2] != "decode") return Error{file, fmt::format("row {} phase", row), "decode", "'" + c[2] + "'"};
    const bool mem = c[3] == "memory_bandwidth_max", flops = c[3] == "throughput_max";
    if (!mem && !flops) return Error{file, fmt::format("row {} metric", row), "memory_bandwidth_max or throughput_max", "'" + c[3] + "'"};
    const char* unit = mem ? "GB/s" : "TFLOPS";
    if (c[5] != unit) return Error{file, fmt::format("row {} unit", row), unit, "'" + c[5] + "'"};
    auto v = detail::positive_cell(c[4], file, row, "value");
    if (!v) return v.error();
    out.push_back({c[0], c[1], c[3], mem ? *v * 1e9 : *v * 1e12, c[6]});
  }
  return out;
}

MlaDecodeProfile mla_decode_profile_for(const GpuSpec& gpu, const SiliconTables& tables) {
  MlaDecodeProfile p;
  const auto key = [](const std::string& s) { return detail::source_key(s); };
  const auto find = [&](const std::string& silicon, const char* metric) -> const AttentionRow* {
    const AttentionRow* best = nullptr;
    for (const auto& r : tables.attention) {
      if (key(r.silicon) == silicon && r.metric == metric && (!best || r.value > best->value)) best = &r;
    }
    return best;
  };
  std::string source = key(gpu.name);
  const AttentionRow* bw = find(source, "memory_bandwidth_max");
  const AttentionRow* fl = find(source, "throughput_max");
  const bool own = bw && fl;
  if (!own && gpu.name == "h200") {
    source = "h100";
    bw = find(source, "memory_bandwidth_max");
    fl = find(source, "throughput_max");
  }
  const auto on = find_gpu(source);
  if (!bw || !fl || !on || !(on->hbm_bandwidth.value() > 0) || !(on->bf16.value() > 0)) return p;
  p.present = true;
  p.mem_share = std::min(1.0, bw->value / on->hbm_bandwidth.value());
  p.compute_share = std::min(1.0, fl->value / on->bf16.value());
  p.basis = own ? Basis::kMeasured : Basis::kTransferred;
  // where each row came from: a --silicon folder's mla_decode.csv or the built-in one
  const auto from_dir = [&](const AttentionRow* r) {
    const std::string k = key(r->silicon) + "/" + r->metric;
    return std::find(tables.dir_attention.begin(), tables.dir_attention.end(), k) != tables.dir_attention.end();
  };
  const std::string file = from_dir(bw) || from_dir(fl) ? tables.dir + "/mla_decode.csv" : std::string("data/silicon/mla_decode.csv");
  p.source = fmt::format("{}: {} {} {:.0f} GB/s ({:.3f} of HBM), {:.0f} TFLOPS ({:.3f} of bf16){}", file, bw->silicon, bw->kernel, bw->value / 1e9,
                         p.mem_share, fl->value / 1e12, p.compute_share, own ? "" : fmt::format(" (the {} rows on the {}: the same SMs and clocks)", source, gpu.name));
  return p;
}

Expected<std::vector<PrefillCeilingRow>> parse_prefill_ceiling_table(const std::string& text, const std::string& file) {
  auto t = detail::read_csv_table(text, file, {"silicon", "kernel", "dtype", "metric", "value", "unit", "source_locator"});
  if (!t) return t.error();
  std::vector<PrefillCeilingRow> out;
  int row = 1;  // the header is row 1, as in the other tables
  for (const auto& c : *t) {
    ++row;
    if (c[2] != "bf16" && c[2] != "fp8") return Error{file, fmt::format("row {} dtype", row), "bf16 or fp8", "'" + c[2] + "'"};
    if (c[3] != "throughput_max") return Error{file, fmt::format("row {} metric", row), "throughput_max", "'" + c[3] + "'"};
    if (c[5] != "TFLOPS") return Error{file, fmt::format("row {} unit", row), "TFLOPS", "'" + c[5] + "'"};
    auto v = detail::positive_cell(c[4], file, row, "value");
    if (!v) return v.error();
    out.push_back({c[0], c[1], c[2], *v * 1e12, c[6]});
  }
  return out;
}

PrefillAttentionProfile prefill_attention_profile_for(const GpuSpec& gpu, const SiliconTables& tables) {
  PrefillAttentionProfile p;
  const auto find = [&](const std::string& silicon, const char* dtype) -> const PrefillCeilingRow* {
    const PrefillCeilingRow* best = nullptr;
    for (const auto& r : tables.prefill_ceilings) {
      if (detail::source_key(r.silicon) == silicon && r.dtype == dtype && (!best || r.flops > best->flops)) best = &r;
    }
    return best;
  };
  std::string source = detail::source_key(gpu.name);
  bool own = find(source, "bf16") != nullptr;
  if (!own) source = detail::architecture_sibling(gpu.name);
  const PrefillCeilingRow* bf = source.empty() ? nullptr : find(source, "bf16");
  const auto on = source.empty() ? std::nullopt : find_gpu(source);
  if (!bf || !on || !(on->bf16.value() > 0) || !(gpu.bf16.value() > 0)) return p;
  const auto file = [&](const PrefillCeilingRow* r) {
    const bool dir = std::find(tables.dir_prefill.begin(), tables.dir_prefill.end(), detail::source_key(r->silicon) + "/" + r->dtype) != tables.dir_prefill.end();
    return dir ? tables.dir + "/attention_prefill.csv" : std::string("data/silicon/attention_prefill.csv");
  };
  const std::string carried = own ? "" : fmt::format(" (the {} row, carried to the {} at the same share of its peak)", source, gpu.name);
  p.present = true;
  p.bf16.share = std::min(1.0, bf->flops / on->bf16.value());
  p.bf16.rate = p.bf16.share * gpu.bf16.value();
  p.bf16.basis = own ? Basis::kMeasured : Basis::kTransferred;
  p.bf16.source = fmt::format("{}: {} {} bf16 {:.0f} TFLOPS ({:.3f} of bf16){}", file(bf), bf->silicon, bf->kernel, bf->flops / 1e12, p.bf16.share, carried);
  const PrefillCeilingRow* f8 = find(source, "fp8");
  if (f8 && on->fp8.value() > 0 && gpu.fp8.value() > 0) {
    p.fp8.share = std::min(1.0, f8->flops / on->fp8.value());
    p.fp8.rate = p.fp8.share * gpu.fp8.value();
    p.fp8.basis = p.bf16.basis;
    p.fp8.source = fmt::format("{}: {} {} fp8 {:.0f} TFLOPS ({:.3f} of fp8){}", file(f8), f8->silicon, f8->kernel, f8->flops / 1e12, p.fp8.share, carried);
  } else {
    // no fp8 row: the bf16 kernel's measured rate (an fp8 kernel is not measured to be faster)
    p.fp8 = p.bf16;
    p.fp8.basis = Basis::kExtrapolated;
    p.fp8.source = p.bf16.source + "; fp8 attention at the bf16 kernel's rate (no fp8 row)";
  }
  return p;
}

}  // namespace shardwise
