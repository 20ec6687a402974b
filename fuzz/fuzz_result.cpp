// libFuzzer harness for what `check` and `--calibration` read: a benchmark result file
// (vLLM JSON, SGLang JSONL with bare Infinity, aiperf/genai-perf exports) when the first byte
// is even, a calibration profile (YAML) when odd. Either is refused with a message or holds
// what docs/check.md and docs/calibration.md say.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "check/result.hpp"
#include "cost/calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 1) == 0) {
    auto r = parse_measured_run(text, "result.json");
    if (!r.ok()) {
      if (r.error().message().empty()) std::abort();
      return 0;
    }
    if (r->completed < 1) std::abort();  // an accepted result has a completed request
    for (const auto* l : {&r->ttft, &r->tpot, &r->itl, &r->e2e}) {
      for (const auto& v : {l->mean, l->p50, l->p90, l->p95, l->p99}) {
        if (v && (!std::isfinite(*v) || *v < 0)) std::abort();
      }
    }
    if (r->request_rate && (!std::isfinite(*r->request_rate) || *r->request_rate <= 0)) std::abort();
    return 0;
  }
  auto c = parse_calibration_profile(text, "profile.yaml");
  if (!c.ok()) {
    if (c.error().message().empty()) std::abort();
    return 0;
  }
  for (const double s : {c->scales.gemm, c->scales.experts, c->scales.attention, c->scales.comm}) {
    if (!(s >= 0.01 && s <= 100)) std::abort();
  }
  if (!(c->step_overhead_us >= 0)) std::abort();
  // what is written reads back the same
  auto back = parse_calibration_profile(calibration_profile_yaml(*c), "again.yaml");
  if (!back.ok() || std::abs(back->step_overhead_us - c->step_overhead_us) > 1e-3 * std::max(1.0, c->step_overhead_us)) std::abort();
  return 0;
}
