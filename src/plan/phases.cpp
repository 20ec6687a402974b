#include "plan/phases.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace shardwise {

bool same_layout(const Plan& a, const Plan& b) {
  return a.deg == b.deg && a.sharding == b.sharding && a.micro_batches == b.micro_batches && a.redundant_experts == b.redundant_experts &&
         a.two_batch_overlap == b.two_batch_overlap;
}

std::optional<std::string> validate_phase_plan(const PhasePlan& p, const ModelSpec& m, const ClusterSpec& c) {
  // the layouts' rules; their batches are the phases' own (0: the most that fit)
  Plan pre = p.prefill, dec = p.decode;
  pre.batch = pre.deg.attn_dp;  // a sequence per attention group
  pre.micro_batches = 0;        // checked below
  dec.batch = std::max<std::int64_t>(dec.deg.attn_dp, dec.batch);
  if (auto why = validate_plan(pre, m, c)) return "the prefill layout: " + *why;
  if (auto why = validate_plan(dec, m, c)) return "the decode layout: " + *why;
  if (p.prefill.deg.total_gpus() != p.decode.deg.total_gpus()) {
    return fmt::format("the prefill layout uses {} GPUs and the decode layout {}: both phases run on the same GPUs",
                       p.prefill.deg.total_gpus(), p.decode.deg.total_gpus());
  }
  if (p.prefill.micro_batches > 1) {
    return fmt::format("the prefill layout's micro_batches {}: a phase plan prefills each chunk as one micro-batch (0 or 1)", p.prefill.micro_batches);
  }
  if (p.buffer_seqs < 0) return fmt::format("buffer_seqs {} is negative", p.buffer_seqs);
  if (!(p.host_bytes_per_gpu >= 0)) return fmt::format("host_bytes_per_gpu {} is negative", p.host_bytes_per_gpu);
  if (p.decode.batch < 0) return fmt::format("the decode batch {} is negative", p.decode.batch);
  return std::nullopt;
}

std::string layout_label(const Plan& p) {
  const Degrees& d = p.deg;
  std::string s = fmt::format("tp {} x attn_dp {} x pp {}", d.tp, d.attn_dp, d.pp);
  if (d.ep > 1) s += fmt::format(" (ep {})", d.ep);
  if (d.replicas > 1) s += fmt::format(" x {} replicas", d.replicas);
  const std::string sh = sharding_to_string(p.sharding);
  if (sh != "megatron") s += ", " + sh;
  return s;
}

std::string phase_plan_label(const PhasePlan& p) {
  return fmt::format("prefill {} -> decode {}, buffer {}", layout_label(p.prefill), layout_label(p.decode),
                     p.buffer_seqs > 0 ? fmt::format("{} sequences", p.buffer_seqs) : std::string("the decode batch"));
}

}  // namespace shardwise
