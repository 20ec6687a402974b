// Phase plans (docs/phases.md, "Cost"): every term of a round, and the best decode batch.
#include "cost/phases.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cost/env.hpp"
#include "model/derived.hpp"

namespace shardwise {
using namespace detail;
namespace {

// A decode layout at b sequences per instance: its TPOT at the round's average context and
// the memory it needs with the KV cache of isl + osl tokens per sequence.
struct DecodeAt {
  double tpot = 0;
  MemoryBreakdown mem;
};
DecodeAt decode_at(const SimContext& ctx, const Plan& dec, std::int64_t b) {
  const Workload& w = ctx.workload;
  const StepResult d = step(ctx, dec, Phase::kDecode, b, w.isl + w.osl / 2, w.isl + w.osl, nullptr);
  DecodeAt out;
  out.tpot = static_cast<double>(std::max<std::int64_t>(d.m, dec.deg.pp)) * d.stage_s / tokens_per_step(w);
  out.mem = d.mem;
  return out;
}

bool fits(const MemoryBreakdown& m, double extra_weights) { return m.total().value() + extra_weights <= m.capacity.value(); }

bool meets_tpot(const Workload& w, double tpot_s) {
  const auto slo = tightest_slo(w.tpot_ms, w.tpot_pct);
  return !slo || tpot_s * 1e3 <= slo->ms;
}

// The largest decode batch per instance (a multiple of attn_dp) that fits beside
// `extra_weights` per GPU and meets the TPOT SLO; 0 when not even one group's worth does.
std::int64_t max_decode_batch(const SimContext& ctx, const Plan& dec, double extra_weights) {
  const std::int64_t a = dec.deg.attn_dp;
  const auto ok = [&](std::int64_t groups) {
    const DecodeAt d = decode_at(ctx, dec, groups * a);
    return fits(d.mem, extra_weights) && meets_tpot(ctx.workload, d.tpot);
  };
  if (!ok(1)) return 0;
  std::int64_t good = 1, bad = 2;
  while (bad <= kMaxBatch / a && ok(bad)) {
    good = bad;
    bad *= 2;
  }
  while (bad - good > 1) {
    const std::int64_t mid = good + (bad - good) / 2;
    (ok(mid) ? good : bad) = mid;
  }
  return good * a;
}


PhaseCost infeasible(PhaseCost c, Infeasible kind, std::string why, bool explain) {
  c.metrics.infeasible = kind;
  if (explain) c.metrics.reason = std::move(why);
  c.metrics.objective = 0;
  return c;
}

// One round at a given decode batch and residency (docs/phases.md has each equation).
PhaseCost round_cost(const SimContext& ctx, const PhasePlan& p, std::int64_t b_dec, bool resident, double host_budget, bool explain) {
  const Workload& w = ctx.workload;
  const GpuSpec& gpu = ctx.cluster.gpu;
  const double G = static_cast<double>(p.decode.deg.total_gpus());
  const double pcie = gpu.pcie_bandwidth.value();
  const double rp = p.prefill.deg.replicas, rd = p.decode.deg.replicas;
  PhaseCost c;
  c.resident = resident;
  // sequences per round: the buffer, at least what the decode GPUs hold at once
  const std::int64_t gpu_seqs = b_dec * p.decode.deg.replicas;
  const std::int64_t B = std::max(p.buffer_seqs, gpu_seqs);
  c.buffer_seqs = B;
  // fewer sequences than the decode GPUs hold: the decode batch is what there is
  const std::int64_t b_eff = std::min<std::int64_t>(b_dec, (B + p.decode.deg.replicas - 1) / p.decode.deg.replicas);
  c.decode_batch = b_eff;
  // prefill phase: chunks of the engine's token budget per attention group, the stages
  // concurrent (as the static plan's offline stream): B prompts at chunk / chunk_s per instance
  Plan pre = p.prefill;
  pre.micro_batches = 1;
  const std::int64_t per_group = std::max<std::int64_t>(1, ctx.engine.max_num_tokens / std::max<std::int64_t>(1, w.isl));
  const std::int64_t chunk = per_group * pre.deg.attn_dp;
  const StepResult pf = step(ctx, pre, Phase::kPrefill, chunk, w.isl, w.isl, nullptr);
  c.prefill_s = static_cast<double>(B) * pf.stage_s / (static_cast<double>(chunk) * rp);
  // decode phase: B sequences of osl tokens, b_eff at a time on each of rd instances
  const DecodeAt d = decode_at(ctx, p.decode, b_eff);
  c.decode_s = static_cast<double>(B) / (static_cast<double>(b_eff) * rd) * static_cast<double>(w.osl) * d.tpot;
  // the KV cache of the round: isl tokens per sequence after prefill, spread over the GPUs
  const double kv_seq = kv_cache_bytes(ctx.model, ctx.formats.kv).for_context(w.isl).value();
  const double kv_round = static_cast<double>(B) * kv_seq / G;  // per GPU
  c.host_tier = B > gpu_seqs;
  if (c.host_tier) {
    // the tiered buffer: every prefilled sequence's KV goes to host memory during prefill
    // (D2H, overlapped); the first decode batch's comes back before decoding starts, the rest's
    // during decode as sequences finish (H2D, overlapped)
    c.kv_offload_s = kv_round / pcie;
    c.kv_first_s = static_cast<double>(gpu_seqs) * kv_seq / G / pcie;
    c.kv_reload_s = static_cast<double>(B - gpu_seqs) * kv_seq / G / pcie;  // the rest, as the first finish
    c.host_kv_bytes_per_gpu = kv_round;
  } else {
    // everything stays on the GPUs: the KV is re-laid out GPU to GPU at the switch
    c.kv_relayout_s = kv_round / peer_bandwidth(ctx.cluster, static_cast<std::int64_t>(G));
  }
  // weights: each layout's shard per GPU (its fullest stage)
  const double w_pre = pf.mem.weights.value(), w_dec = d.mem.weights.value();
  if (!resident) c.weights_s = (w_pre + w_dec) / pcie;  // the incoming layout's shard from host, at both switches
  c.switch_s = 2.0 * ctx.params.step_overhead_us * 1e-6;
  const double prefill_phase = std::max(c.prefill_s, c.kv_offload_s);
  const double decode_phase = std::max(c.decode_s, c.kv_reload_s);
  c.round_s = prefill_phase + decode_phase + c.kv_first_s + c.kv_relayout_s + c.weights_s + c.switch_s;
  Metrics& m = c.metrics;
  m.batch = b_eff;
  m.gpus_used = p.decode.deg.total_gpus();
  m.micro_batches = 1;
  m.step_s = d.tpot * tokens_per_step(w);
  m.output_tok_s_per_gpu = static_cast<double>(B) * static_cast<double>(w.osl) / c.round_s / G;
  m.input_tok_s_per_gpu = m.output_tok_s_per_gpu * static_cast<double>(w.isl) / static_cast<double>(w.osl);
  // a prompt waits half the prefill phase on average; a sequence decodes without pause
  // (host reloads that outlast the compute stretch it)
  m.ttft_s = prefill_phase / 2.0;
  m.tpot_s = decode_phase / (static_cast<double>(B) / (static_cast<double>(b_eff) * rd) * static_cast<double>(w.osl));
  m.objective = m.output_tok_s_per_gpu;
  // memory: the fuller phase, with the other layout's weights when resident
  MemoryBreakdown mem_pre = pf.mem, mem_dec = d.mem;
  // without a host tier the prefilled sequences stay on the GPUs until the switch: the prefill
  // phase holds the whole buffer's KV cache (spread over the GPUs)
  if (!c.host_tier) mem_pre.kv_cache = Bytes(std::max(pf.mem.kv_cache.value(), kv_round));
  if (resident) {
    mem_pre.weights = Bytes(w_pre + w_dec);
    mem_dec.weights = Bytes(w_pre + w_dec);
  }
  m.memory = mem_dec.total() >= mem_pre.total() ? mem_dec : mem_pre;
  if (mem_pre.total() > mem_pre.capacity || mem_dec.total() > mem_dec.capacity) {
    const MemoryBreakdown& over = mem_dec.total() > mem_dec.capacity ? mem_dec : mem_pre;
    return infeasible(c, Infeasible::kMemory,
                      fmt::format("the {} phase needs {} per GPU (weights {}{}, KV cache {}, activations {}, reserve {}) but HBM holds {}",
                                  &over == &mem_dec ? "decode" : "prefill", gb(over.total().value()), gb(over.weights.value()),
                                  resident ? " of both layouts" : "", gb(over.kv_cache.value()), gb(over.activations.value()),
                                  gb(over.reserve.value()), gb(over.capacity.value())),
                      explain);
  }
  const double host_need = c.host_kv_bytes_per_gpu + (resident ? 0.0 : w_pre + w_dec);
  if (host_need > host_budget) {
    return infeasible(c, Infeasible::kMemory,
                      fmt::format("the host buffer needs {} per GPU (KV cache of {} sequences {}{}) but {} is allotted", gb(host_need), B,
                                  gb(c.host_kv_bytes_per_gpu), resident ? "" : fmt::format(", both layouts' weights {}", gb(w_pre + w_dec)),
                                  gb(host_budget)),
                      explain);
  }
  const auto tpot = tightest_slo(w.tpot_ms, w.tpot_pct);
  const auto ttft = tightest_slo(w.ttft_ms, w.ttft_pct);
  if (tpot && m.tpot_s * 1e3 > tpot->ms) {
    return infeasible(c, Infeasible::kTpotSlo, fmt::format("TPOT {:.2f} ms exceeds the SLO of {} ms", m.tpot_s * 1e3, tpot->ms), explain);
  }
  if (ttft && m.ttft_s * 1e3 > ttft->ms) {
    return infeasible(c, Infeasible::kTtftSlo, fmt::format("TTFT {:.1f} ms exceeds the SLO of {} ms", m.ttft_s * 1e3, ttft->ms), explain);
  }
  return c;
}

}  // namespace

double peer_bandwidth(const ClusterSpec& c, std::int64_t gpus) {
  if (c.levels.empty() || gpus <= 1) return c.gpu.pcie_bandwidth.value();
  return c.levels[c.level_for_span(0, gpus - 1)].bandwidth.value();
}

SimContext offline_phases_context(const SimContext& ctx) {
  SimContext o = ctx;
  o.workload.mode = Mode::kOffline;
  o.workload.ttft_ms.reset();
  o.workload.tpot_ms.reset();
  o.workload.ttft_pct.clear();
  o.workload.tpot_pct.clear();
  return o;
}

double prefill_rate(const SimContext& ctx, const Plan& layout) {
  const Workload& w = ctx.workload;
  Plan pre = layout;
  pre.micro_batches = 1;
  const std::int64_t chunk = std::max<std::int64_t>(1, ctx.engine.max_num_tokens / std::max<std::int64_t>(1, w.isl)) * pre.deg.attn_dp;
  const StepResult pf = step(ctx, pre, Phase::kPrefill, chunk, w.isl, w.isl, nullptr);
  if (!fits(pf.mem, 0.0)) return 0.0;
  return static_cast<double>(chunk) * static_cast<double>(layout.deg.replicas) / pf.stage_s;
}

DecodeRate decode_rate(const SimContext& ctx, const Plan& layout, double extra_weights) {
  DecodeRate r;
  r.batch = max_decode_batch(ctx, layout, extra_weights);
  if (r.batch == 0) return r;
  r.tpot_s = decode_at(ctx, layout, r.batch).tpot;
  r.tok_s = static_cast<double>(r.batch) * static_cast<double>(layout.deg.replicas) / r.tpot_s;
  return r;
}

PhaseCost evaluate_phases(const SimContext& ctx, const PhasePlan& p, const PhaseOptions& opt, bool explain) {
  PhaseCost out;
  if (auto why = validate_phase_plan(p, ctx.model, ctx.cluster)) return infeasible(out, Infeasible::kInvalidPlan, *why, explain);
  if (ctx.workload.mode != Mode::kOffline) {
    return infeasible(out, Infeasible::kInvalidPlan,
                      fmt::format("phase plans are costed for offline workloads (isl and osl, every request queued), not {}",
                                  to_string(ctx.workload.mode)),
                      explain);
  }
  if (same_layout(p.prefill, p.decode)) {
    // nothing ever switches: the engine runs the static plan
    out.is_static = true;
    out.resident = true;
    out.metrics = evaluate(ctx, p.decode, nullptr, explain);
    out.decode_batch = out.metrics.batch;
    out.buffer_seqs = out.metrics.batch * p.decode.deg.replicas;
    return out;
  }
  // the decode batch: as planned, else the largest that fits (both layouts resident, and the
  // decode layout alone); the better round of the two residencies
  const auto batch_for = [&](bool resident) -> std::int64_t {
    if (p.decode.batch > 0) return p.decode.batch;
    double other = 0;  // the prefill layout's weights beside the decode layout's (its fullest stage)
    if (resident) {
      const std::vector<double> sw = stage_weight_bytes(ctx, p.prefill);
      other = *std::max_element(sw.begin(), sw.end());
    }
    return max_decode_batch(ctx, p.decode, other);
  };
  PhaseCost best;
  bool have = false;
  for (bool resident : {true, false}) {
    const std::int64_t b = batch_for(resident);
    if (b <= 0) continue;
    PhaseCost c = round_cost(ctx, p, b, resident, opt.host_bytes_per_gpu, explain);
    if (!have || (c.metrics.feasible() && (!best.metrics.feasible() || c.metrics.objective > best.metrics.objective))) {
      best = std::move(c);
      have = true;
    }
  }
  if (!have) {
    return infeasible(out, Infeasible::kMemory, "the decode layout cannot hold one sequence per attention group within HBM and the TPOT SLO", explain);
  }
  return best;
}

}  // namespace shardwise
