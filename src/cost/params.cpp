#include "cost/params.hpp"

#include <nlohmann/json.hpp>

#include "core/embedded_data.hpp"
#include "core/fields.hpp"

namespace shardwise {

Expected<CostParams> parse_cost_params(std::string_view yaml, const std::string& file, const std::string& gpu) {
  auto doc = parse_yaml_text(yaml, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  r.reject_unknown({"gpu", "gemm_efficiency", "gemm_half_rows", "mem_efficiency", "attn_efficiency", "kernel_overhead_us",
                    "comm_efficiency", "comm_overhead_us", "attn_mem_efficiency", "step_overhead_us", "expert_skew", "expert_mem_efficiency", "fit"});
  CostParams p;
  p.gpu = r.string_or("gpu", gpu);
  p.gemm_efficiency = r.number("gemm_efficiency", 0.01, 1.0);
  p.gemm_half_rows = r.number("gemm_half_rows", 0.0, 1e5);
  p.mem_efficiency = r.number("mem_efficiency", 0.01, 1.0);
  p.attn_efficiency = r.number("attn_efficiency", 0.01, 1.0);
  p.kernel_overhead_us = r.number("kernel_overhead_us", 0.0, 1e4);
  p.comm_efficiency = r.number("comm_efficiency", 0.01, 1.0);
  p.comm_overhead_us = r.number("comm_overhead_us", 0.0, 1e4);
  p.attn_mem_efficiency = r.number("attn_mem_efficiency", 0.01, 1.0);
  p.step_overhead_us = r.number("step_overhead_us", 0.0, 1e6);
  p.expert_skew = r.number_or("expert_skew", p.expert_skew, 0.0, 4.0);
  p.expert_mem_efficiency = r.number_or("expert_mem_efficiency", p.mem_efficiency, 0.01, 1.0);
  if (sink.failed()) return *sink.first;
  p.calibrated = (p.gpu == gpu);
  return p;
}

CostParams cost_params_for(const std::string& gpu) {
  // One fit per silicon: H200 is the H100 chip with more and faster HBM, GB200's GPUs are
  // B200s; those share their sibling's fit (calibrated: the fit saw their rows too). Other
  // GPUs fall back to the nearest fit (B300/GB300: B200's; the rest: H100's), marked uncalibrated.
  const std::string silicon = gpu == "h200" ? "h100" : gpu == "gb200" ? "b200" : gpu;
  // uncalibrated GPUs borrow the nearest silicon's fit: Blackwell Ultra Blackwell's, the rest Hopper's
  const std::string nearest = (gpu == "b300" || gpu == "gb300") ? "b200" : "h100";
  for (const std::string& want : {silicon, nearest}) {
    for (const auto& e : embedded_calibration()) {
      if (want == e.name) {
        auto p = parse_cost_params(e.text, e.path, want);
        SW_CHECK(p.ok(), "embedded calibration data must parse");
        p->calibrated = (want == silicon);  // p->gpu names the fit used
        return *p;
      }
    }
  }
  CostParams p;
  p.gpu = gpu;
  return p;
}

}  // namespace shardwise
