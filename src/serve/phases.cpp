// Seesaw's schedule over requests (serve/phases.hpp; docs/phases.md, "Serving").
#include "serve/phases.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "cost/env.hpp"
#include "model/derived.hpp"
#include "serve/scheduler.hpp"

namespace shardwise {
using namespace serve_detail;
namespace {

struct Live {
  std::size_t req = 0;
  double left = 0;  // output tokens still to produce (speculative decoding adds a fraction per step)
};

// The schedule's fixed ingredients, from the cost layer.
struct Machine {
  const SimContext* ctx = nullptr;
  PhasePlan p;
  PhaseCost cost;  // the closed form's round (the decode batch, residency, the host tier)
  double pcie = 0, peer = 0, gpus = 0, step_overhead = 0;
  double w_pre = 0, w_dec = 0;
  std::int64_t chunk = 1;  // prompts per prefill iteration, all prefill instances
  std::int64_t cap = 1;    // sequences decoding at once, all decode instances
  std::map<std::int64_t, double> decode_step;                       // by sequences per instance
  std::map<std::pair<std::int64_t, std::int64_t>, double> prefill_step;  // by prompts per instance and prompt length
  std::int64_t iterations = 0;

  double prefill_time(std::int64_t per_instance, std::int64_t isl) {
    const std::pair<std::int64_t, std::int64_t> key{per_instance, isl};
    if (auto it = prefill_step.find(key); it != prefill_step.end()) return it->second;
    Plan pre = p.prefill;
    pre.micro_batches = 1;
    const double t = detail::step(*ctx, pre, Phase::kPrefill, per_instance, isl, isl, nullptr).stage_s;
    return prefill_step[key] = t;
  }
  double decode_time(std::int64_t per_instance) {
    if (auto it = decode_step.find(per_instance); it != decode_step.end()) return it->second;
    const Workload& w = ctx->workload;
    const detail::StepResult d = detail::step(*ctx, p.decode, Phase::kDecode, per_instance, w.isl + w.osl / 2, w.isl + w.osl, nullptr);
    return decode_step[per_instance] = static_cast<double>(std::max<std::int64_t>(d.m, p.decode.deg.pp)) * d.stage_s;
  }
};

// One run of the schedule over `reqs` (sorted by arrival).
std::vector<RequestRecord> run_phases(Machine& m, const std::vector<Req>& reqs, double kv_per_token) {
  const Workload& w = m.ctx->workload;
  const double tps = tokens_per_step(w);
  const double rp = m.p.prefill.deg.replicas, rd = m.p.decode.deg.replicas;
  const std::int64_t B = std::max<std::int64_t>(1, m.cost.buffer_seqs);
  std::vector<RequestRecord> rec(reqs.size());
  std::deque<std::size_t> queue, buffer;
  std::vector<Live> active;
  std::size_t next = 0, done = 0;
  double t = 0;
  const auto arrive = [&] {
    while (next < reqs.size() && reqs[next].arrival <= t + 1e-12) {
      rec[next].arrival_s = reqs[next].arrival;
      rec[next].input = reqs[next].isl;
      rec[next].output = reqs[next].osl;
      queue.push_back(next++);
    }
  };
  const auto kv_bytes = [&](std::int64_t tokens) { return kv_per_token * static_cast<double>(tokens); };
  while (done < reqs.size()) {
    // --- prefill phase: chunks until the buffer is full or nothing is queued
    arrive();
    if (queue.empty() && buffer.empty()) {
      t = std::max(t, reqs[next].arrival);
      continue;
    }
    while (!queue.empty() && static_cast<std::int64_t>(buffer.size()) < B) {
      const std::int64_t k = std::min<std::int64_t>({m.chunk, static_cast<std::int64_t>(queue.size()), B - static_cast<std::int64_t>(buffer.size())});
      std::int64_t tokens = 0;
      double kv = 0;
      for (std::int64_t j = 0; j < k; ++j) {
        const std::size_t i = queue[static_cast<std::size_t>(j)];
        tokens = std::max(tokens, reqs[i].isl);
        kv += kv_bytes(reqs[i].isl);
      }
      const auto per_instance = static_cast<std::int64_t>(std::ceil(static_cast<double>(k) / rp));
      double dt = m.prefill_time(per_instance, tokens);  // the engine's step overhead included
      ++m.iterations;
      if (m.cost.host_tier) dt = std::max(dt, kv / m.gpus / m.pcie);  // the KV offload, overlapped
      t += dt;
      for (std::int64_t j = 0; j < k; ++j) {
        const std::size_t i = queue.front();
        queue.pop_front();
        rec[i].admitted_s = t - dt;
        rec[i].first_token_s = t;
        buffer.push_back(i);
      }
      arrive();
    }
    // --- switch to decode: the decode layout's weights unless resident; with a host tier the
    // first batch's KV over PCIe before decoding starts (the rest overlapped), without one the
    // whole buffer's, GPU to GPU over the innermost level spanning the GPUs
    double kv_switch = 0;
    const std::size_t first = m.cost.host_tier ? std::min<std::size_t>(buffer.size(), static_cast<std::size_t>(m.cap)) : buffer.size();
    for (std::size_t j = 0; j < first; ++j) kv_switch += kv_bytes(reqs[buffer[j]].isl);
    t += m.step_overhead + (m.cost.resident ? 0.0 : m.w_dec / m.pcie) + kv_switch / m.gpus / (m.cost.host_tier ? m.pcie : m.peer);
    std::size_t preloaded = first;  // already on the GPUs: not reloaded
    // --- decode phase: continuous batching over the buffered sequences until all finish
    while (!buffer.empty() || !active.empty()) {
      double loaded = 0;
      while (!buffer.empty() && static_cast<std::int64_t>(active.size()) < m.cap) {
        const std::size_t i = buffer.front();
        buffer.pop_front();
        active.push_back(Live{i, static_cast<double>(std::max<std::int64_t>(0, reqs[i].osl - 1))});
        if (preloaded > 0) {
          --preloaded;
        } else {
          loaded += kv_bytes(reqs[i].isl);
        }
      }
      const auto per_instance = static_cast<std::int64_t>(std::ceil(static_cast<double>(active.size()) / rd));
      double dt = m.decode_time(std::max<std::int64_t>(1, per_instance));
      ++m.iterations;
      if (m.cost.host_tier) dt = std::max(dt, loaded / m.gpus / m.pcie);  // the reload, overlapped
      t += dt;
      for (Live& l : active) l.left -= tps;
      for (auto it = active.begin(); it != active.end();) {
        if (it->left <= 1e-9) {
          rec[it->req].finish_s = t;
          ++done;
          it = active.erase(it);
        } else {
          ++it;
        }
      }
    }
    // --- switch back to prefill
    t += m.step_overhead + (m.cost.resident ? 0.0 : m.w_pre / m.pcie);
    arrive();
  }
  return rec;
}

}  // namespace

ServeResult simulate_phases(const SimContext& ctx, const PhasePlan& p, const PhaseOptions& cost, const ServeOptions& opt) {
  const Workload& w = ctx.workload;
  ServeResult res;
  if (same_layout(p.prefill, p.decode)) return simulate_serving(ctx, p.decode, opt);
  if (auto why = validate_phase_plan(p, ctx.model, ctx.cluster)) {
    res.feasible = false;
    res.reason = *why;
    return res;
  }
  const Arrivals& arr = w.serve.arrivals;
  if (arr.kind == Arrivals::Kind::kClosed) {
    res.feasible = false;
    res.reason = "a closed loop of users through a phase plan: not simulated (Seesaw's schedule serves queued or arriving requests: a rate, all at once or a trace)";
    return res;
  }
  // the closed form's round settles the decode batch, residency and the host tier
  const SimContext offline = offline_phases_context(ctx);
  Machine m;
  m.ctx = &offline;
  m.p = p;
  m.cost = evaluate_phases(offline, p, cost, true);
  if (!m.cost.metrics.feasible()) {
    res.feasible = false;
    res.reason = m.cost.metrics.reason;
    return res;
  }
  const GpuSpec& gpu = ctx.cluster.gpu;
  m.pcie = gpu.pcie_bandwidth.value();
  m.peer = peer_bandwidth(ctx.cluster, p.decode.deg.total_gpus());
  m.gpus = static_cast<double>(p.decode.deg.total_gpus());
  m.step_overhead = ctx.params.step_overhead_us * 1e-6;
  const std::vector<double> wp = stage_weight_bytes(offline, p.prefill), wd = stage_weight_bytes(offline, p.decode);
  m.w_pre = *std::max_element(wp.begin(), wp.end());
  m.w_dec = *std::max_element(wd.begin(), wd.end());
  m.chunk = std::max<std::int64_t>(1, ctx.engine.max_num_tokens / std::max<std::int64_t>(1, w.isl)) * p.prefill.deg.attn_dp *
            p.prefill.deg.replicas;
  m.cap = m.cost.decode_batch * p.decode.deg.replicas;
  const double kv_per_token = kv_cache_bytes(ctx.model, ctx.formats.kv).for_context(1).value();
  std::vector<Req> reqs = make_requests(w, 1);
  if (arr.kind != Arrivals::Kind::kPoisson && arr.kind != Arrivals::Kind::kTrace) {
    for (Req& r : reqs) r.arrival = 0;
  }
  std::stable_sort(reqs.begin(), reqs.end(), [](const Req& a, const Req& b) { return a.arrival < b.arrival; });
  std::vector<RequestRecord> rec = run_phases(m, reqs, kv_per_token);
  double last = 0;
  for (const RequestRecord& r : rec) last = std::max(last, r.finish_s);
  res.makespan_s = last - (reqs.empty() ? 0.0 : reqs.front().arrival);
  summarize(w, rec, m.gpus, 1.0, res);
  res.requests = static_cast<std::int64_t>(reqs.size());
  res.iterations = m.iterations;
  res.step_evaluations = static_cast<std::int64_t>(m.decode_step.size() + m.prefill_step.size());
  res.kv_tokens = m.cost.decode_batch * (w.isl + w.osl);  // what a decode instance holds at its batch (the host buffer besides)
  // the capacity: the same requests all queued at once, completions between the 10th and 90th percentile
  bool overloaded = false;
  if (arr.kind == Arrivals::Kind::kPoisson || arr.kind == Arrivals::Kind::kTrace) {
    res.offered_requests_per_s = arr.kind == Arrivals::Kind::kPoisson ? arr.rate
                                 : reqs.size() > 1 && reqs.back().arrival > reqs.front().arrival
                                     ? static_cast<double>(reqs.size() - 1) / (reqs.back().arrival - reqs.front().arrival)
                                     : 0.0;
    if (opt.measure_capacity) {
      std::vector<Req> burst = reqs;
      for (Req& r : burst) r.arrival = 0;
      std::vector<double> fin;
      for (const RequestRecord& r : run_phases(m, burst, kv_per_token)) fin.push_back(r.finish_s);
      std::sort(fin.begin(), fin.end());
      if (fin.size() >= 10) {
        const std::size_t lo = fin.size() / 10, hi = fin.size() * 9 / 10;
        if (fin[hi] > fin[lo]) res.capacity_requests_per_s = static_cast<double>(hi - lo) / (fin[hi] - fin[lo]);
      }
      double growth = 0;
      const bool grew = queue_grew(rec, growth);
      res.queue_growth_ms = growth;
      overloaded = res.capacity_requests_per_s > 0 && res.offered_requests_per_s > res.capacity_requests_per_s &&
                   (static_cast<std::int64_t>(reqs.size()) >= kMinWindowed || grew);
      if (overloaded && res.window_s > 0) cap_at_capacity(res);
    }
  }
  judge(w, overloaded, res);
  if (opt.keep_records) res.records = std::move(rec);
  return res;
}

}  // namespace shardwise
