#include "serve/disagg.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/derived.hpp"
#include "serve/scheduler.hpp"
#include "serve/step_times.hpp"

namespace shardwise {
using namespace serve_detail;

double kv_transfer_bytes(const SimContext& ctx, std::int64_t tokens) {
  return kv_cache_bytes(ctx.model, ctx.formats.kv).for_context(tokens).value();
}

namespace {
const TopologyLevel& link_of(const SimContext& ctx, const DisaggPlan& d) {
  const std::int64_t last = std::max<std::int64_t>(0, std::min(d.gpus(), ctx.cluster.num_gpus) - 1);
  return ctx.cluster.levels[ctx.cluster.level_for_span(0, last)];
}
}  // namespace

double kv_transfer_s(const SimContext& ctx, const DisaggPlan& d, double bytes) {
  const TopologyLevel& l = link_of(ctx, d);
  const double senders = static_cast<double>(std::min(d.prefill.deg.instance_gpus(), d.decode.deg.instance_gpus()));
  return bytes / (l.bandwidth.value() * senders) + l.latency.value();
}

namespace {
double instance_rate(const SimContext& ctx, const Plan& instance, bool prefill) {
  Plan one = instance;
  one.deg.replicas = 1;
  StepTimes st(ctx, one);
  if (st.kv_tokens() < 1) return 0.0;
  std::vector<Req> reqs = make_requests(ctx.workload, 1);
  for (Req& r : reqs) {
    if (r.isl + (prefill ? 1 : r.osl) > st.kv_block_tokens()) return 0.0;
    r.arrival = 0;
    if (prefill) {
      r.osl = 1;
    } else {
      r.ready = true;
    }
  }
  return saturated_rate(ctx, one, st, reqs);
}
}  // namespace

double prefill_instance_rate(const SimContext& ctx, const Plan& instance) { return instance_rate(ctx, instance, true); }
double decode_instance_rate(const SimContext& ctx, const Plan& instance) { return instance_rate(ctx, instance, false); }

DisaggResult simulate_disaggregated(const SimContext& ctx, const DisaggPlan& d, const ServeOptions& opt) {
  DisaggResult out;
  ServeResult& res = out.total;
  const Workload& w = ctx.workload;
  const Arrivals::Kind kind = w.serve.arrivals.kind;
  if (kind == Arrivals::Kind::kClosed) {
    res.feasible = false;
    res.reason = "closed-loop arrivals are not simulated for a disaggregated plan (the decode pool's completions would drive the "
                 "prefill pool's arrivals): give a rate";
    return out;
  }
  StepTimes sp(ctx, d.prefill), sd(ctx, d.decode);
  res.kv_tokens = sd.kv_tokens();
  for (const auto* st : {&sp, &sd}) {
    if (st->kv_tokens() < 1) {
      res.feasible = false;
      res.reason = (st == &sp ? "prefill pool: " : "decode pool: ") + st->kv_reason();
      return out;
    }
  }
  const std::vector<Req> reqs = make_requests(w, 1);  // the deployment's requests
  const auto x = static_cast<std::size_t>(std::max<std::int32_t>(1, d.prefill.deg.replicas));
  const auto y = static_cast<std::size_t>(std::max<std::int32_t>(1, d.decode.deg.replicas));
  for (const Req& r : reqs) {
    if (r.isl + 1 > sp.kv_block_tokens() || r.isl + r.osl > sd.kv_block_tokens()) {
      res.feasible = false;
      res.reason = fmt::format("a request of {} + {} tokens needs more KV cache than an instance holds (prefill {} tokens, decode {})", r.isl,
                               r.osl, sp.kv_tokens(), sd.kv_tokens());
      return out;
    }
  }
  // 1. the prefill pool: request i on instance i mod x, each a prompt and one token
  std::vector<RequestRecord> rec(reqs.size());
  std::vector<std::vector<std::size_t>> owner(x);
  for (std::size_t i = 0; i < reqs.size(); ++i) owner[i % x].push_back(i);
  double pq = 0;
  for (std::size_t k = 0; k < x; ++k) {
    std::vector<Req> mine;
    for (std::size_t i : owner[k]) mine.push_back(Req{reqs[i].arrival, reqs[i].isl, 1, false});
    if (mine.empty()) continue;
    const Core c = run(ctx, d.prefill, sp, mine, kind, 0, opt.watch);
    if (!c.res.feasible) {
      res.feasible = false;
      res.stopped = c.res.stopped;
      res.reason = "prefill pool: " + c.res.reason;
      return out;
    }
    res.iterations += c.res.iterations;
    res.preemptions += c.res.preemptions;
    for (std::size_t j = 0; j < owner[k].size(); ++j) {
      RequestRecord& r = rec[owner[k][j]];
      r = c.rec[j];
      r.input = reqs[owner[k][j]].isl;
      r.output = reqs[owner[k][j]].osl;
      pq += r.admitted_s - r.arrival_s;
    }
  }
  // 2. the KV cache travels; 3. the decode pool, in order of arrival there, instance j mod y
  std::vector<std::pair<double, std::size_t>> at_decode;
  double tx = 0, mb = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const double bytes = kv_transfer_bytes(ctx, reqs[i].isl);
    const double t = kv_transfer_s(ctx, d, bytes);
    tx += t;
    mb += bytes / 1e6;
    if (reqs[i].osl > 1) at_decode.emplace_back(rec[i].first_token_s + t, i);
    else rec[i].finish_s = rec[i].first_token_s;
  }
  std::stable_sort(at_decode.begin(), at_decode.end());
  std::vector<std::vector<std::size_t>> dec_owner(y);
  for (std::size_t j = 0; j < at_decode.size(); ++j) dec_owner[j % y].push_back(at_decode[j].second);
  double dq = 0;
  std::vector<RequestRecord> dec_recs;
  for (std::size_t k = 0; k < y; ++k) {
    std::vector<Req> mine;
    for (std::size_t i : dec_owner[k]) mine.push_back(Req{rec[i].first_token_s + kv_transfer_s(ctx, d, kv_transfer_bytes(ctx, reqs[i].isl)), reqs[i].isl, reqs[i].osl, true});
    if (mine.empty()) continue;
    const Core c = run(ctx, d.decode, sd, mine, Arrivals::Kind::kTrace, 0, opt.watch);
    if (!c.res.feasible) {
      res.feasible = false;
      res.stopped = c.res.stopped;
      res.reason = "decode pool: " + c.res.reason;
      return out;
    }
    res.iterations += c.res.iterations;
    res.preemptions += c.res.preemptions;
    for (std::size_t j = 0; j < dec_owner[k].size(); ++j) {
      rec[dec_owner[k][j]].finish_s = c.rec[j].finish_s;
      dq += c.rec[j].admitted_s - c.rec[j].arrival_s;
      dec_recs.push_back(c.rec[j]);
    }
  }
  const double n = static_cast<double>(std::max<std::size_t>(1, reqs.size()));
  out.transfer_ms = tx / n * 1e3;
  out.kv_mb_per_request = mb / n;
  out.prefill_queue_ms = pq / n * 1e3;
  out.decode_queue_ms = at_decode.empty() ? 0.0 : dq / static_cast<double>(at_decode.size()) * 1e3;
  out.link = link_of(ctx, d).name;
  double first = 1e300, last = 0;
  for (const RequestRecord& r : rec) {
    first = std::min(first, r.arrival_s);
    last = std::max(last, r.finish_s);
  }
  res.makespan_s = last - first;
  res.requests = static_cast<std::int64_t>(reqs.size());
  res.events = res.iterations + 2 * res.requests;
  res.step_evaluations = sp.evaluations() + sd.evaluations();
  summarize(w, rec, static_cast<double>(d.gpus()), 1.0, res);
  // occupancy over the deployment: in the system (Little's law over the records), and decoding
  // (inside the steady-state window when summarize measured one: Little's law holds there)
  double in_sys = 0, decoding = 0;
  const double w0 = res.window_s > 0 ? res.window_start_s : first, w1 = res.window_s > 0 ? res.window_start_s + res.window_s : last;
  for (const RequestRecord& r : rec) {
    in_sys += std::max(0.0, std::min(r.finish_s, w1) - std::max(r.arrival_s, w0));
    decoding += std::max(0.0, std::min(r.finish_s, w1) - std::max(r.first_token_s, w0));
  }
  const double span = w1 - w0;
  res.mean_in_system = span > 0 ? in_sys / span : 0.0;
  res.mean_running = span > 0 ? decoding / span : 0.0;
  // offered load, each pool's capacity, and whether a queue grew
  bool overloaded = false;
  if (kind == Arrivals::Kind::kPoisson) res.offered_requests_per_s = w.serve.arrivals.rate;
  if (kind == Arrivals::Kind::kTrace && reqs.size() > 1 && reqs.back().arrival > 0) {
    res.offered_requests_per_s = static_cast<double>(reqs.size() - 1) / reqs.back().arrival;
  }
  if (res.offered_requests_per_s > 0 && opt.measure_capacity) {
    std::vector<Req> pre, dec;
    for (std::size_t i = 0; i < reqs.size(); i += x) pre.push_back(Req{0, reqs[i].isl, 1, false});
    for (std::size_t i = 0; i < reqs.size(); i += y) dec.push_back(Req{0, reqs[i].isl, reqs[i].osl, true});
    out.prefill_capacity = saturated_rate(ctx, d.prefill, sp, pre, opt.watch) * static_cast<double>(x);
    out.decode_capacity = saturated_rate(ctx, d.decode, sd, dec, opt.watch) * static_cast<double>(y);
    if (should_stop(opt.watch)) {
      DisaggResult stop;
      stop.total.feasible = false;
      stop.total.stopped = true;
      stop.total.reason = fmt::format("by {} after {:.1f} s, while measuring the pools' capacities", opt.watch->stop_text(),
                                      opt.watch->elapsed_s());
      return stop;
    }
    res.capacity_requests_per_s = std::min(out.prefill_capacity, out.decode_capacity);
    double g1 = 0, g2 = 0;
    const bool grew = queue_grew(rec, g1) || queue_grew(dec_recs, g2);
    res.queue_growth_ms = std::max(g1, g2);
    // no queue stays bounded above the capacity (under kMinWindowed requests the capacity is
    // only a lower bound: the queue must also have grown)
    overloaded = res.offered_requests_per_s > res.capacity_requests_per_s &&
                 (static_cast<std::int64_t>(reqs.size()) >= kMinWindowed || grew);
    if (overloaded && res.window_s > 0) cap_at_capacity(res);
  }
  judge(w, overloaded, res);
  if (!overloaded) {  // the pools' own shares of the mean request
    res.bottleneck_note += fmt::format("; of it {:.1f} ms waiting in the prefill pool, {:.1f} ms shipping {:.1f} MB of KV over {}, {:.1f} ms waiting in the decode pool",
                                       out.prefill_queue_ms, out.transfer_ms, out.kv_mb_per_request, out.link, out.decode_queue_ms);
  }
  if (opt.keep_records) res.records = std::move(rec);
  return out;
}

}  // namespace shardwise
