// The request-level serving simulation (docs/serving.md): arrivals, the engine's scheduler
// iteration by iteration, the statistics and the verdict.
#include "serve/serving.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/rng.hpp"
#include "serve/scheduler.hpp"
#include "serve/step_times.hpp"

namespace shardwise {

double LatencyStats::stat(double pct) const {
  if (pct <= 0) return mean;
  if (pct <= 50) return p50;
  if (pct <= 90) return p90;
  if (pct <= 95) return p95;
  if (pct <= 99) return p99;
  return max;  // p99.9 of at most a few thousand requests: the largest is the honest bound
}

double quantile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

LatencyStats latency_stats(const std::vector<double>& ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::vector<double> v = ms;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  const auto q = [&](double p) {
    const double pos = p * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
  };
  s.p50 = q(0.5);
  s.p90 = q(0.9);
  s.p95 = q(0.95);
  s.p99 = q(0.99);
  s.max = v.back();
  return s;
}

const char* to_string(Bottleneck b) {
  switch (b) {
    case Bottleneck::kQueueing: return "queueing";
    case Bottleneck::kPrefill: return "prefill";
    case Bottleneck::kDecode: return "decode";
    case Bottleneck::kKvCache: return "KV cache";
  }
  return "?";
}

namespace {
using namespace serve_detail;

std::string ms_text(double ms) { return ms >= 1000 ? fmt::format("{:.2f} s", ms / 1e3) : fmt::format("{:.1f} ms", ms); }

}  // namespace

std::optional<Error> arrivals_error(const Workload& w, std::int64_t replicas, bool disaggregated, const std::string& origin,
                                    const std::string& field) {
  const Arrivals& a = w.serve.arrivals;
  if (a.kind != Arrivals::Kind::kClosed || a.concurrency < 1) return std::nullopt;
  if (disaggregated) return std::nullopt;  // the pools route every user's requests themselves
  if (replicas > 1 && a.concurrency % replicas != 0) {
    return Error{origin, field, fmt::format("a number of users that splits evenly over the {} replicas (a multiple of {})", replicas, replicas),
                 std::to_string(a.concurrency)};
  }
  return std::nullopt;
}

double saturated_requests_per_s(const SimContext& ctx, const Plan& plan, Watch* watch) {
  const std::int64_t replicas = std::max<std::int64_t>(1, plan.deg.replicas);
  StepTimes steps(ctx, plan);
  if (steps.kv_tokens() < 1) return 0.0;
  const std::vector<Req> reqs = make_requests(ctx.workload, replicas);
  for (const Req& r : reqs) {
    if (r.isl + r.osl > steps.kv_block_tokens()) return 0.0;
  }
  return saturated_rate(ctx, plan, steps, reqs, watch) * static_cast<double>(replicas);
}

namespace serve_detail {

namespace {
double rel_diff(double a, double b, double abs_floor) {
  const double d = std::abs(a - b);
  if (d <= abs_floor) return 0.0;
  return d / std::max({std::abs(a), std::abs(b), 1e-12});
}
// Completions (requests, output tokens) inside [t0, t1) over its span (half-open: adjacent
// spans count each completion once).
std::pair<double, double> completion_rate(const std::vector<RequestRecord>& recs, double t0, double t1) {
  double n = 0, tok = 0;
  for (const RequestRecord& r : recs) {
    if (r.finish_s >= t0 && r.finish_s < t1) {
      n += 1;
      tok += static_cast<double>(r.output);
    }
  }
  const double span = std::max(t1 - t0, 1e-12);
  return {n / span, tok / span};
}
// Arrivals inside [t0, t1) over its span.
double arrival_rate(const std::vector<RequestRecord>& recs, double t0, double t1) {
  double n = 0;
  for (const RequestRecord& r : recs) n += r.arrival_s >= t0 && r.arrival_s < t1 ? 1.0 : 0.0;
  return n / std::max(t1 - t0, 1e-12);
}
}  // namespace

void summarize(const Workload& w, const std::vector<RequestRecord>& all, double gpus, double replicas, ServeResult& res) {
  // the steady-state window: the requests arriving between the 10th and the 90th percentile
  // arrival (a closed loop's trimmed to whole cycles of its users)
  std::vector<const RequestRecord*> order;
  order.reserve(all.size());
  for (const RequestRecord& r : all) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const RequestRecord* x, const RequestRecord* y) { return x->arrival_s < y->arrival_s; });
  const std::size_t n_all = order.size();
  std::size_t lo = 0, hi = n_all;
  // a closed loop's users per instance: its requests come back once per user and cycle
  const bool closed = w.serve.arrivals.kind == Arrivals::Kind::kClosed;
  const auto users = static_cast<std::size_t>(
      closed ? std::max<std::int64_t>(1, w.serve.arrivals.concurrency / std::max<std::int64_t>(1, std::llround(replicas))) : 0);
  if (n_all >= static_cast<std::size_t>(kMinWindowed)) {
    lo = n_all / 10;
    hi = n_all - n_all / 10;
    // whole cycles of a closed loop: with fixed lengths its users arrive in lockstep, every
    // user once per cycle, so a window of k x users arrivals spans k cycles exactly (a partial
    // cycle would count its arrivals without its whole gap)
    if (closed && hi - lo >= users) hi = lo + (hi - lo) / users * users;
  }
  // the window is [t0, t1): from the first measured arrival to the first arrival after the
  // measured ones, so that it holds one gap per measured request (a closed loop's users arrive
  // in waves: ending at the last measured arrival would count a wave more than its gaps). The
  // run is windowed when the measured arrivals themselves spread over a quarter of it
  const double t0 = n_all ? order[lo]->arrival_s : 0.0;
  const double t_last = n_all ? order[hi - 1]->arrival_s : 0.0;
  const double t1 = n_all ? order[hi < n_all ? hi : hi - 1]->arrival_s : 0.0;
  const bool windowed = n_all >= static_cast<std::size_t>(kMinWindowed) && hi < n_all && t_last - t0 > 0.25 * std::max(res.makespan_s, 1e-12);
  if (!windowed) {  // all at once (or a short run): the whole run
    lo = 0;
    hi = n_all;
  }
  std::vector<RequestRecord> recs;
  recs.reserve(hi - lo);
  for (std::size_t i = lo; i < hi; ++i) recs.push_back(*order[i]);
  std::vector<double> ttft, tpot, e2e;
  double q = 0, p = 0, d = 0;
  for (const RequestRecord& r : recs) {
    ttft.push_back((r.first_token_s - r.arrival_s) * 1e3);
    e2e.push_back((r.finish_s - r.arrival_s) * 1e3);
    if (r.output > 1) tpot.push_back((r.finish_s - r.first_token_s) * 1e3 / static_cast<double>(r.output - 1));
    q += r.admitted_s - r.arrival_s;
    p += r.first_token_s - r.admitted_s;
    d += r.finish_s - r.first_token_s;
  }
  const double nreq = static_cast<double>(std::max<std::size_t>(1, recs.size()));
  res.measured_requests = static_cast<std::int64_t>(recs.size());
  res.queue_ms = q / nreq * 1e3;
  res.prefill_ms = p / nreq * 1e3;
  res.decode_ms = d / nreq * 1e3;
  res.ttft_ms = latency_stats(ttft);
  res.tpot_ms = latency_stats(tpot);
  res.e2e_ms = latency_stats(e2e);
  // throughput: the requests arriving in the window over its span (in steady state, the
  // arrival rate or the capacity), else the whole run's completions over its span
  double req_rate = 0, tok_rate = 0, in_rate = 0;
  // an open loop's halves compare their completions over the window shifted by the measured
  // requests' mean time in the system (the requests arriving in it complete about that much
  // later), cut at the last completion
  double last_finish = 0;
  for (const RequestRecord& r : all) last_finish = std::max(last_finish, r.finish_s);
  const double lag = res.e2e_ms.mean / 1e3;
  const double c0 = t0 + lag, c1 = std::min(t1 + lag, last_finish);
  if (windowed) {
    res.window_start_s = t0;
    res.window_s = t1 - t0;
    // throughput: the requests arriving in [t0, t1) over its span (every one of them is
    // served: the run drains); in steady state what completes, with the least noise. Above the
    // capacity simulate_serving caps it at the capacity
    double n_in = 0, out_in = 0, in_in = 0;
    for (const RequestRecord& r : all) {
      if (r.arrival_s >= t0 && r.arrival_s < t1) {
        n_in += 1;
        out_in += static_cast<double>(r.output);
        in_in += static_cast<double>(r.input);
      }
    }
    req_rate = n_in / res.window_s;
    tok_rate = out_in / res.window_s;
    in_rate = in_in / res.window_s;
    // occupancy over the window too (Little's law holds inside it): the time each request
    // spends in the system, and running, within [t0, t1)
    double in_sys = 0, running = 0;
    for (const RequestRecord& r : all) {
      in_sys += std::max(0.0, std::min(r.finish_s, t1) - std::max(r.arrival_s, t0));
      running += std::max(0.0, std::min(r.finish_s, t1) - std::max(r.admitted_s, t0));
    }
    res.mean_in_system = in_sys / res.window_s;
    res.mean_running = running / res.window_s;
  } else {
    res.window_start_s = res.window_s = 0;
    const double span = std::max(res.makespan_s, 1e-12);
    req_rate = static_cast<double>(all.size()) / span;
    double ot = 0, it = 0;
    for (const RequestRecord& r : all) {
      ot += static_cast<double>(r.output);
      it += static_cast<double>(r.input);
    }
    tok_rate = ot / span;
    in_rate = it / span;
  }
  res.output_tok_s_per_gpu = tok_rate / gpus;
  res.total_tok_s_per_gpu = (tok_rate + in_rate) / gpus;
  res.requests_per_s = req_rate * replicas;
  // goodput: the share of measured requests within the tightest bound on each latency
  // (DistServe's definition), at the completion rate
  const auto ttft_b = tightest_slo(w.ttft_ms, w.ttft_pct), tpot_b = tightest_slo(w.tpot_ms, w.tpot_pct);
  std::int64_t good = 0;
  for (const RequestRecord& r : recs) {
    const double tt = (r.first_token_s - r.arrival_s) * 1e3;
    const double tp = r.output > 1 ? (r.finish_s - r.first_token_s) * 1e3 / static_cast<double>(r.output - 1) : 0.0;
    good += (!ttft_b || tt <= ttft_b->ms) && (!tpot_b || tp <= tpot_b->ms);
  }
  res.goodput_requests_per_s = res.requests_per_s * static_cast<double>(good) / nreq;
  // the halves of the window: do they agree?
  res.halves_diff = 0;
  res.stable = true;
  if (windowed && recs.size() >= 2) {
    // a closed loop's halves hold whole cycles each where the window holds two or more
    const std::size_t cycles = closed ? recs.size() / users : 0;
    const std::size_t mid = cycles >= 2 ? cycles / 2 * users : recs.size() / 2;
    const double tm = recs[mid].arrival_s;
    const auto half = [&](std::size_t from, std::size_t to) {
      std::vector<double> a, b;
      for (std::size_t i = from; i < to; ++i) {
        a.push_back((recs[i].first_token_s - recs[i].arrival_s) * 1e3);
        if (recs[i].output > 1) b.push_back((recs[i].finish_s - recs[i].first_token_s) * 1e3 / static_cast<double>(recs[i].output - 1));
      }
      return std::pair{latency_stats(a), latency_stats(b)};
    };
    const auto [tt1, tp1] = half(0, mid);
    const auto [tt2, tp2] = half(mid, recs.size());
    // throughput: a closed loop's arrivals are its completions (each user's next request
    // arrives as its last one ends), so its halves compare the arrivals of whole cycles; an
    // open loop's compare the completions over the halves shifted by the mean time in the system
    const bool shifted = !closed && c1 - c0 > 0.25 * (t1 - t0);
    const double r1 = closed ? arrival_rate(all, t0, tm) : shifted ? completion_rate(all, c0, std::min(tm + lag, c1)).first : completion_rate(all, t0, tm).first;
    const double r2 = closed ? arrival_rate(all, tm, t1) : shifted ? completion_rate(all, std::min(tm + lag, c1), c1).first : completion_rate(all, tm, t1).first;
    double lat = 0;
    for (const auto& [x, y] : {std::pair{tt1, tt2}, {tp1, tp2}}) {
      lat = std::max({lat, rel_diff(x.mean, y.mean, 1.0), rel_diff(x.p50, y.p50, 1.0), rel_diff(x.p90, y.p90, 1.0)});
    }
    const double thr = rel_diff(r1, r2, 0.0);
    res.halves_diff = std::max(thr, lat);
    res.stable = thr <= kSteadyThroughputTol && lat <= kSteadyLatencyTol;
  }
}

void cap_at_capacity(ServeResult& res) {
  // above the capacity the arrivals outrun the completions: what is served is the capacity
  if (res.requests_per_s <= res.capacity_requests_per_s || res.requests_per_s <= 0) return;
  const double f = res.capacity_requests_per_s / res.requests_per_s;
  res.requests_per_s *= f;
  res.goodput_requests_per_s *= f;
  res.output_tok_s_per_gpu *= f;
  res.total_tok_s_per_gpu *= f;
}

bool queue_grew(const std::vector<RequestRecord>& recs, double& growth_ms) {
  // the last quarter of the arrivals waited for admission over four times as long as the
  // first quarter, and over 50 ms
  const std::size_t n = recs.size(), quarter = std::max<std::size_t>(1, n / 4);
  if (n == 0) return false;
  std::vector<const RequestRecord*> by_arrival;
  for (const RequestRecord& r : recs) by_arrival.push_back(&r);
  std::stable_sort(by_arrival.begin(), by_arrival.end(), [](const RequestRecord* x, const RequestRecord* y) { return x->arrival_s < y->arrival_s; });
  double first = 0, last = 0;
  for (std::size_t i = 0; i < quarter; ++i) {
    first += by_arrival[i]->admitted_s - by_arrival[i]->arrival_s;
    last += by_arrival[n - 1 - i]->admitted_s - by_arrival[n - 1 - i]->arrival_s;
  }
  first /= static_cast<double>(quarter);
  last /= static_cast<double>(quarter);
  growth_ms = (last - first) * 1e3;
  return last > 4.0 * first && last > 0.05;
}

void judge(const Workload& w, bool overloaded, ServeResult& res) {
  // the bottleneck: where the mean request spends its time; the KV cache when it held admissions back
  if (overloaded) {
    res.bottleneck = Bottleneck::kQueueing;
    res.bottleneck_note = fmt::format("the offered {:.2f} requests/s exceed the capacity of {:.2f} requests/s: the queue grows without bound",
                                      res.offered_requests_per_s, res.capacity_requests_per_s);
  } else if ((res.preemptions > 0 || res.kv_blocked_share >= 0.1) && res.queue_ms >= res.prefill_ms) {
    res.bottleneck = Bottleneck::kKvCache;
    res.bottleneck_note = fmt::format("admissions waited for KV blocks in {:.0f}% of the iterations with a queue; {} preemptions",
                                      res.kv_blocked_share * 100.0, res.preemptions);
  } else if (res.queue_ms >= res.prefill_ms && res.queue_ms >= res.decode_ms) {
    res.bottleneck = Bottleneck::kQueueing;
    res.bottleneck_note = fmt::format("the mean request waits {} for admission{}", ms_text(res.queue_ms),
                                      res.seq_cap_share >= 0.1 ? fmt::format(" (the cap of running sequences held {:.0f}% of the iterations with a queue)", res.seq_cap_share * 100.0) : "");
  } else if (res.prefill_ms >= res.decode_ms) {
    res.bottleneck = Bottleneck::kPrefill;
    res.bottleneck_note = fmt::format("the mean request spends {} from admission to its first token", ms_text(res.prefill_ms));
  } else {
    res.bottleneck = Bottleneck::kDecode;
    res.bottleneck_note = fmt::format("the mean request spends {} decoding ({} per token)", ms_text(res.decode_ms), ms_text(res.tpot_ms.mean));
  }
  // the verdict
  const auto check = [&](const char* what, const LatencyStats& s, const std::optional<double>& mean, const std::vector<SloBound>& pcts) {
    if (!res.feasible) return;
    std::vector<SloBound> all = pcts;
    if (mean) all.insert(all.begin(), SloBound{0.0, *mean});
    for (const SloBound& b : all) {
      const double v = s.stat(b.pct);
      if (v > b.ms) {
        res.feasible = false;
        res.reason = fmt::format("{} {} {} exceeds the SLO of {} ms by {}", what, slo_stat_name(b.pct), ms_text(v), b.ms, ms_text(v - b.ms));
        return;
      }
    }
  };
  if (overloaded) {
    res.feasible = false;
    res.reason = "overloaded: " + res.bottleneck_note;
  }
  check("TTFT", res.ttft_ms, w.ttft_ms, w.ttft_pct);
  check("TPOT", res.tpot_ms, w.tpot_ms, w.tpot_pct);
}

}  // namespace serve_detail

namespace {
// A run the watch stopped: infeasible, no statistics, the reason given (an interrupt's own
// when empty).
ServeResult stopped_result(const Watch& watch, std::string reason) {
  ServeResult stop;
  stop.feasible = false;
  stop.stopped = true;
  stop.reason = reason.empty() ? fmt::format("by {} after {:.1f} s", watch.stop_text(), watch.elapsed_s()) : std::move(reason);
  return stop;
}
}  // namespace

ServeResult simulate_serving(const SimContext& ctx, const Plan& plan, const ServeOptions& opt) {
  const Workload& w = ctx.workload;
  const std::int64_t replicas = std::max<std::int64_t>(1, plan.deg.replicas);
  StepTimes steps(ctx, plan, opt.exact_steps);
  ServeResult res;
  res.kv_tokens = steps.kv_tokens();
  if (steps.kv_tokens() < 1) {
    res.feasible = false;
    res.reason = steps.kv_reason();
    return res;
  }
  const std::vector<Req> reqs = make_requests(w, replicas);
  std::int64_t longest = 0;
  for (const Req& r : reqs) longest = std::max(longest, r.isl + r.osl);
  if (longest > steps.kv_block_tokens()) {
    res.feasible = false;
    res.reason = fmt::format("a request of {} tokens (prompt and output) needs more KV cache than the instance holds ({} tokens in whole "
                             "blocks of {})", longest, steps.kv_block_tokens(), std::max<std::int64_t>(1, ctx.engine.kv_block_tokens));
    return res;
  }
  const Arrivals& arr = w.serve.arrivals;
  // a closed loop's users split evenly over the replicas (each replica is simulated once and
  // counted `replicas` times: an uneven split would count users that do not exist)
  if (arr.kind == Arrivals::Kind::kClosed && arr.concurrency % replicas != 0) {
    res.feasible = false;
    res.reason = fmt::format("{} closed-loop users do not split evenly over {} replicas (each replica needs the same number of users: "
                             "a concurrency that is a multiple of {}, or other replicas)", arr.concurrency, replicas, replicas);
    return res;
  }
  const std::int64_t users = arr.kind == Arrivals::Kind::kClosed ? std::max<std::int64_t>(1, arr.concurrency / replicas) : 0;
  // without a request count, the length doubles until the window's halves agree (the same
  // seed: each run extends the last one's requests)
  const bool auto_length = w.serve.requests == 0 && (arr.kind == Arrivals::Kind::kPoisson || arr.kind == Arrivals::Kind::kClosed);
  std::vector<Req> cur = reqs;
  Workload grown = w;
  double run_took = 0;
  Core core;
  for (int runs = 1;; ++runs) {
    const double run_started = opt.watch ? opt.watch->elapsed_s() : 0.0;
    core = run(ctx, plan, steps, cur, arr.kind, users, opt.watch);
    if (!core.res.feasible) return core.res;
    run_took = opt.watch ? opt.watch->elapsed_s() - run_started : 0.0;
    res = core.res;
    res.kv_tokens = steps.kv_tokens();
    summarize(w, core.rec, static_cast<double>(plan.deg.instance_gpus()), static_cast<double>(replicas), res);
    res.length_runs = runs;
    const std::int64_t per_instance = static_cast<std::int64_t>(cur.size());
    if (!auto_length || res.stable || 2 * per_instance > kMaxAutoRequests) break;
    // a queue that grows over the run is an overload, not a transient: no length makes it steady
    if (double growth = 0; queue_grew(core.rec, growth)) break;
    // the next run takes about twice as long: not begun when it cannot end in time
    if (opt.watch && opt.watch->remaining_s() < 2.5 * run_took) break;
    grown.serve.requests = 2 * per_instance * replicas;
    cur = make_requests(grown, replicas);
  }
  res.step_evaluations = steps.evaluations();
  // offered load and capacity (the same requests, all queued at once)
  bool overloaded = false;
  if (arr.kind == Arrivals::Kind::kPoisson || arr.kind == Arrivals::Kind::kTrace) {
    if (arr.kind == Arrivals::Kind::kPoisson) {
      res.offered_requests_per_s = arr.rate;
    } else if (reqs.size() > 1 && reqs.back().arrival > reqs.front().arrival) {  // (a trace: never grown)
      // the trace's rate over its own span (a trace need not start at 0)
      res.offered_requests_per_s =
          static_cast<double>(reqs.size() - 1) / (reqs.back().arrival - reqs.front().arrival) * static_cast<double>(replicas);
    }
    if (opt.measure_capacity) {
      // the capacity run takes about as long as the run just done: not begun when it cannot end in time
      const bool no_time = opt.watch && opt.watch->remaining_s() < 1.2 * run_took;
      const double rate = no_time ? 0.0 : saturated_rate(ctx, plan, steps, cur, opt.watch);
      if (no_time || should_stop(opt.watch)) {
        if (opt.watch->stopped() == StopReason::kCancelled) return stopped_result(*opt.watch, "");
        return stopped_result(*opt.watch, fmt::format("by {} after {:.1f} s: the arrivals ran in {:.1f} s, and the capacity run (every request "
                                                      "queued at once) {}",
                                                      opt.watch->time_limit_s() > 0 ? fmt::format("the time limit ({:g} s)", opt.watch->time_limit_s())
                                                                                    : opt.watch->stop_text(),
                                                      opt.watch->elapsed_s(), run_took, no_time ? "would not end within it" : "was cut short"));
      }
      if (rate > 0) {
        res.capacity_requests_per_s = rate * static_cast<double>(replicas);
        // overloaded whenever the offered rate exceeds the capacity: no queue stays bounded
        // there, however long the run. A run under kMinWindowed requests measures only a lower
        // bound of the capacity (they never fill the batch): there the queue must also have grown
        const bool grew = queue_grew(core.rec, res.queue_growth_ms);
        overloaded = res.offered_requests_per_s > res.capacity_requests_per_s &&
                     (static_cast<std::int64_t>(cur.size()) >= kMinWindowed || grew);
        if (overloaded && res.window_s > 0) cap_at_capacity(res);
      }
      res.step_evaluations = steps.evaluations();
    }
  }
  // the knee check: the same requests offered kKneeRateStep more often
  if (opt.knee_check && arr.kind == Arrivals::Kind::kPoisson && !overloaded && res.capacity_requests_per_s > 0 &&
      res.offered_requests_per_s >= kKneeLoad * res.capacity_requests_per_s) {
    KneeCheck kc;
    kc.rate_scale = 1.0 + kKneeRateStep;
    kc.past_capacity = kc.rate_scale * res.offered_requests_per_s > res.capacity_requests_per_s;
    // it takes about as long as the run just done: not begun when it cannot end in time
    if (opt.watch && opt.watch->time_limit_s() > 0 && opt.watch->remaining_s() < 1.2 * run_took) {
      kc.skipped = fmt::format("not run: the time limit ({:g} s) leaves {:.1f} s, the arrivals ran in {:.1f} s", opt.watch->time_limit_s(),
                               opt.watch->remaining_s(), run_took);
    } else {
      SimContext more = ctx;
      more.workload.serve.arrivals.rate *= kc.rate_scale;
      more.workload.serve.requests = static_cast<std::int64_t>(cur.size()) * replicas;
      Core k = run(more, plan, steps, make_requests(more.workload, replicas), arr.kind, users, opt.watch);
      // an interrupt ends the command, as in the runs above
      if (opt.watch && opt.watch->stopped() == StopReason::kCancelled) return stopped_result(*opt.watch, "");
      if (!k.res.feasible || should_stop(opt.watch)) {
        kc.skipped = k.res.stopped || should_stop(opt.watch) ? fmt::format("cut short by the time limit ({:g} s)", opt.watch ? opt.watch->time_limit_s() : 0.0)
                                                              : fmt::format("no result: {}", k.res.reason);
      } else {
        ServeResult kr = k.res;
        summarize(more.workload, k.rec, static_cast<double>(plan.deg.instance_gpus()), static_cast<double>(replicas), kr);
        kc.ttft_ms = kr.ttft_ms;
        kc.tpot_ms = kr.tpot_ms;
        double growth = 0;
        kc.queue_grew = queue_grew(k.rec, growth);
      }
    }
    res.knee = kc;
    res.step_evaluations = steps.evaluations();
  }
  judge(w, overloaded, res);
  if (opt.keep_records) res.records = std::move(core.rec);
  return res;
}

}  // namespace shardwise
