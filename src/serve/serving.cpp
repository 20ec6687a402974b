// The request-level serving simulation (docs/serving.md): arrivals, the engine's scheduler
// iteration by iteration, the statistics and the verdict.
#include "serve/serving.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "core/rng.hpp"
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

struct Req {
  double arrival = 0;
  std::int64_t isl = 0, osl = 0;
};

std::int64_t sample_length(const std::optional<LengthDist>& d, std::int64_t fixed, Rng& rng) {
  if (!d) return fixed;
  switch (d->kind) {
    case LengthDist::Kind::kFixed: return std::max<std::int64_t>(1, std::llround(d->mean));
    case LengthDist::Kind::kUniform:
      return d->min + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(d->max - d->min + 1)));
    case LengthDist::Kind::kLognormal: {
      // ln x ~ N(mu, sigma^2) with E[x] = mean: mu = ln(mean) - sigma^2 / 2 (Box-Muller for z)
      const double u1 = std::max(rng.uniform(), 1e-300), u2 = rng.uniform();
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      const double mu = std::log(d->mean) - d->sigma * d->sigma / 2.0;
      auto x = static_cast<std::int64_t>(std::llround(std::exp(mu + d->sigma * z)));
      x = std::max(x, d->min);
      if (d->max > 0) x = std::min(x, d->max);
      return std::max<std::int64_t>(1, x);
    }
    case LengthDist::Kind::kHistogram: {
      double total = 0;
      for (const auto& b : d->bins) total += b.second;
      double u = rng.uniform() * total;
      for (const auto& b : d->bins) {
        if (u < b.second) return b.first;
        u -= b.second;
      }
      return d->bins.back().first;
    }
  }
  return fixed;
}

// One instance's requests, in arrival order (closed loop: arrival times set as users free up).
std::vector<Req> make_requests(const Workload& w, std::int64_t replicas) {
  const ServeSpec& s = w.serve;
  std::vector<Req> out;
  Rng rng(s.seed);
  if (s.arrivals.kind == Arrivals::Kind::kTrace) {
    const std::int64_t n = s.requests > 0 ? std::min<std::int64_t>(s.requests, static_cast<std::int64_t>(s.trace.size()))
                                          : static_cast<std::int64_t>(s.trace.size());
    for (std::int64_t i = 0; i < n; i += replicas) {  // round-robin over the replicas
      const auto& t = s.trace[static_cast<std::size_t>(i)];
      out.push_back(Req{t.arrival_s, t.input, t.output});
    }
    return out;
  }
  const std::int64_t total = s.requests > 0 ? s.requests : kDefaultRequests;
  const std::int64_t n = std::max<std::int64_t>(1, (total + replicas - 1) / replicas);
  out.resize(static_cast<std::size_t>(n));
  Rng lengths = rng.fork(1), gaps = rng.fork(2);
  double t = 0;
  const double rate = s.arrivals.rate / static_cast<double>(replicas);  // a random split of a Poisson stream is Poisson
  for (auto& r : out) {
    r.isl = sample_length(s.input, w.isl, lengths);
    r.osl = sample_length(s.output, w.osl, lengths);
    if (s.arrivals.kind == Arrivals::Kind::kPoisson) {
      t += -std::log(1.0 - gaps.uniform()) / rate;
      r.arrival = t;
    }
  }
  return out;
}

struct Core {
  ServeResult res;
  std::vector<RequestRecord> rec;
};

// The scheduler, iteration by iteration, over one instance's requests.
Core run(const SimContext& ctx, const Plan& plan, StepTimes& steps, const std::vector<Req>& reqs, Arrivals::Kind kind,
         std::int64_t users) {
  const EngineTraits& eng = ctx.engine;
  const Workload& w = ctx.workload;
  const std::int64_t a = std::max<std::int64_t>(1, plan.deg.attn_dp);
  const std::int64_t n = static_cast<std::int64_t>(reqs.size());
  const std::int64_t B = std::max<std::int64_t>(1, eng.kv_block_tokens);
  const std::int64_t total_blocks = steps.kv_tokens() / B;
  const std::int64_t watermark = eng.reserve_full_kv ? 0 : total_blocks / 100;  // vLLM keeps 1% free for admissions
  const std::int64_t budget0 = std::max<std::int64_t>(1, eng.max_num_tokens) * a;
  const std::int64_t cap = std::max<std::int64_t>(1, eng.max_num_seqs) * a;
  const double tps = tokens_per_step(w);
  const std::int64_t dec_tokens = 1 + w.spec_tokens;
  const auto blocks_for = [&](std::int64_t tokens) { return (tokens + B - 1) / B; };

  Core out;
  auto& rec = out.rec;
  rec.resize(static_cast<std::size_t>(n));
  std::vector<std::int64_t> prompt(static_cast<std::size_t>(n)), done(static_cast<std::size_t>(n), 0), blocks(static_cast<std::size_t>(n), 0);
  std::vector<double> gen(static_cast<std::size_t>(n), 0.0);
  std::vector<char> finished(static_cast<std::size_t>(n), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    rec[u].input = reqs[u].isl;
    rec[u].output = reqs[u].osl;
    rec[u].arrival_s = reqs[u].arrival;
    rec[u].admitted_s = rec[u].first_token_s = -1;
    prompt[u] = reqs[u].isl;
  }
  std::deque<std::int64_t> waiting;
  std::vector<std::int64_t> running, dec, pre_idx, pre_tok;
  std::int64_t free_blocks = total_blocks, completed = 0, next = 0, iterations = 0, preemptions = 0;
  std::int64_t waiting_iters = 0, kv_blocked_iters = 0, cap_iters = 0;
  double t = 0, in_sys = 0, run_int = 0, first_arrival = std::numeric_limits<double>::infinity();
  const bool closed = kind == Arrivals::Kind::kClosed;
  const auto arrive = [&](std::int64_t i, double at) {
    rec[static_cast<std::size_t>(i)].arrival_s = at;
    first_arrival = std::min(first_arrival, at);
    in_sys += t - at;  // waited since its arrival inside the last iteration
    waiting.push_back(i);
  };
  if (closed) {
    for (; next < std::min(users, n); ++next) arrive(next, 0.0);
  }
  const auto preempt_last = [&]() {
    const std::int64_t v = running.back();
    running.pop_back();
    const auto u = static_cast<std::size_t>(v);
    free_blocks += blocks[u];
    blocks[u] = 0;
    done[u] = 0;
    prompt[u] = rec[u].input + static_cast<std::int64_t>(gen[u]);  // recomputed: prompt and output so far
    ++rec[u].preemptions;
    ++preemptions;
    waiting.push_front(v);
    return v;
  };
  // Grows r's blocks to hold `tokens`, preempting the newest running requests; false if r itself was preempted.
  const auto grow = [&](std::int64_t r, std::int64_t tokens) {
    const auto u = static_cast<std::size_t>(r);
    if (eng.reserve_full_kv || tokens <= blocks[u] * B) return true;  // the blocks it holds suffice
    const std::int64_t need = blocks_for(tokens) - blocks[u];
    while (need > free_blocks) {
      if (preempt_last() == r) return false;
    }
    if (need > 0) {
      free_blocks -= need;
      blocks[u] += need;
    }
    return true;
  };
  while (completed < n) {
    if (!closed) {
      while (next < n && reqs[static_cast<std::size_t>(next)].arrival <= t) {
        arrive(next, reqs[static_cast<std::size_t>(next)].arrival);
        ++next;
      }
    }
    if (running.empty() && waiting.empty()) {
      if (next >= n) break;  // nothing left (cannot happen while completed < n)
      t = reqs[static_cast<std::size_t>(next)].arrival;  // idle until the next arrival
      continue;
    }
    dec.clear();
    pre_idx.clear();
    pre_tok.clear();
    std::int64_t budget = budget0;
    double ctx_sum = 0;  // the decodes' contexts
    // 1. the running requests, oldest first: a prompt's next chunk, or a decode
    bool prefilling = false;
    for (std::size_t i = 0; i < running.size(); ++i) {
      const std::int64_t r = running[i];
      const auto u = static_cast<std::size_t>(r);
      if (done[u] < prompt[u]) {
        if (budget <= 0) continue;
        const std::int64_t c = std::min(prompt[u] - done[u], budget);
        if (!grow(r, done[u] + c)) break;
        pre_idx.push_back(r);
        pre_tok.push_back(c);
        budget -= c;
        prefilling = true;
      } else if (!eng.prefill_first) {
        if (budget < dec_tokens) continue;
        if (!grow(r, done[u] + static_cast<std::int64_t>(std::ceil(gen[u] + tps)))) break;
        dec.push_back(r);
        ctx_sum += static_cast<double>(done[u]) + gen[u];
        budget -= dec_tokens;
      }
    }
    // 2. waiting requests, first come first served, while the cap, the budget and the KV cache allow
    const bool had_waiting = !waiting.empty();
    bool kv_blocked = false;
    while (!waiting.empty() && budget > 0 && static_cast<std::int64_t>(running.size()) < cap) {
      const std::int64_t r = waiting.front();
      const auto u = static_cast<std::size_t>(r);
      const std::int64_t c = std::min(prompt[u], budget);
      const std::int64_t need = eng.reserve_full_kv ? blocks_for(prompt[u] + rec[u].output - static_cast<std::int64_t>(gen[u])) : blocks_for(c);
      const std::int64_t keep = running.empty() ? 0 : watermark;
      if (need + keep > free_blocks) {
        kv_blocked = true;
        break;
      }
      waiting.pop_front();
      free_blocks -= need;
      blocks[u] += need;
      if (rec[u].admitted_s < 0) rec[u].admitted_s = t;
      running.push_back(r);
      pre_idx.push_back(r);
      pre_tok.push_back(c);
      budget -= c;
      prefilling = true;
    }
    if (had_waiting) {
      ++waiting_iters;
      kv_blocked_iters += kv_blocked;
      cap_iters += !kv_blocked && !waiting.empty() && static_cast<std::int64_t>(running.size()) >= cap;
    }
    // prefill-first engines decode only when no prompt is scheduled
    if (eng.prefill_first && !prefilling) {
      for (std::size_t i = 0; i < running.size(); ++i) {
        const std::int64_t r = running[i];
        const auto u = static_cast<std::size_t>(r);
        if (!grow(r, done[u] + static_cast<std::int64_t>(std::ceil(gen[u] + tps)))) break;
        dec.push_back(r);
        ctx_sum += static_cast<double>(done[u]) + gen[u];
      }
    }
    std::int64_t ptok = 0;
    for (std::int64_t c : pre_tok) ptok += c;
    if (dec.empty() && ptok == 0) {
      out.res.feasible = false;
      out.res.reason = "the scheduler stalled: no request could be scheduled (an internal error; please report it)";
      return out;
    }
    const auto nd = static_cast<std::int64_t>(dec.size());
    const double c_mean = nd > 0 ? ctx_sum / static_cast<double>(nd) : 0.0;
    const auto np = static_cast<std::int64_t>(pre_idx.size());
    const double dt = eng.prefill_first && ptok > 0 ? steps.prefill(ptok, np) : steps.mixed(nd, c_mean, ptok, np);
    in_sys += static_cast<double>(running.size() + waiting.size()) * dt;
    run_int += static_cast<double>(running.size()) * dt;
    t += dt;
    ++iterations;
    bool any_finished = false;
    const auto finish = [&](std::int64_t r) {
      any_finished = true;
      const auto u = static_cast<std::size_t>(r);
      rec[u].finish_s = t;
      finished[u] = 1;
      free_blocks += blocks[u];
      blocks[u] = 0;
      ++completed;
      if (closed && next < n) arrive(next++, t);  // the user's next request
    };
    for (std::int64_t r : dec) {
      const auto u = static_cast<std::size_t>(r);
      gen[u] += tps;
      if (gen[u] >= static_cast<double>(rec[u].output) - 1e-9) finish(r);
    }
    for (std::size_t k = 0; k < pre_idx.size(); ++k) {
      const std::int64_t r = pre_idx[k];
      const auto u = static_cast<std::size_t>(r);
      done[u] += pre_tok[k];
      if (done[u] < prompt[u]) continue;
      if (rec[u].first_token_s < 0) rec[u].first_token_s = t;
      gen[u] += 1.0;  // the prompt's last chunk yields the next token
      if (gen[u] >= static_cast<double>(rec[u].output) - 1e-9) finish(r);
    }
    if (any_finished) std::erase_if(running, [&](std::int64_t r) { return finished[static_cast<std::size_t>(r)] != 0; });
  }
  ServeResult& res = out.res;
  res.iterations = iterations;
  res.preemptions = preemptions;
  res.events = iterations + 2 * n;
  const double makespan = t - (std::isfinite(first_arrival) ? first_arrival : 0.0);
  res.makespan_s = makespan;
  res.mean_in_system = makespan > 0 ? in_sys / makespan : 0.0;
  res.mean_running = makespan > 0 ? run_int / makespan : 0.0;
  res.kv_blocked_share = waiting_iters > 0 ? static_cast<double>(kv_blocked_iters) / static_cast<double>(waiting_iters) : 0.0;
  res.seq_cap_share = waiting_iters > 0 ? static_cast<double>(cap_iters) / static_cast<double>(waiting_iters) : 0.0;
  res.requests = n;
  return out;
}

// The saturated completion rate of one instance: the requests all queued at once, the rate
// between the 10th and the 90th percentile completions (the ramp of the first admissions
// and the drain of the last requests left out; the whole run when that window is under
// half of it, as when every request fits at once); 0 when the scheduler cannot run them.
double saturated_rate(const SimContext& ctx, const Plan& plan, StepTimes& steps, std::vector<Req> reqs) {
  for (Req& r : reqs) r.arrival = 0;
  const Core sat = run(ctx, plan, steps, reqs, Arrivals::Kind::kBurst, 0);
  if (!sat.res.feasible || sat.res.makespan_s <= 0) return 0.0;
  std::vector<double> done;
  done.reserve(sat.rec.size());
  for (const RequestRecord& r : sat.rec) done.push_back(r.finish_s);
  std::sort(done.begin(), done.end());
  const std::size_t a = done.size() / 10, b = done.size() - 1 - done.size() / 10;
  // when most requests finish in one wave (all of them fit at once) the window says nothing
  // of a steady state: the whole run's rate then (a lower bound)
  if (done.size() >= 20 && done[b] - done[a] >= 0.5 * sat.res.makespan_s) return static_cast<double>(b - a) / (done[b] - done[a]);
  return static_cast<double>(done.size()) / sat.res.makespan_s;
}

std::string ms_text(double ms) { return ms >= 1000 ? fmt::format("{:.2f} s", ms / 1e3) : fmt::format("{:.1f} ms", ms); }

}  // namespace

double saturated_requests_per_s(const SimContext& ctx, const Plan& plan) {
  const std::int64_t replicas = std::max<std::int64_t>(1, plan.deg.replicas);
  StepTimes steps(ctx, plan);
  if (steps.kv_tokens() < 1) return 0.0;
  const std::vector<Req> reqs = make_requests(ctx.workload, replicas);
  for (const Req& r : reqs) {
    if (r.isl + r.osl > steps.kv_tokens()) return 0.0;
  }
  return saturated_rate(ctx, plan, steps, reqs) * static_cast<double>(replicas);
}

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
  if (longest > steps.kv_tokens()) {
    res.feasible = false;
    res.reason = fmt::format("a request of {} tokens (prompt and output) needs more KV cache than the instance holds ({} tokens)", longest,
                             steps.kv_tokens());
    return res;
  }
  const Arrivals& arr = w.serve.arrivals;
  const std::int64_t users = arr.kind == Arrivals::Kind::kClosed ? std::max<std::int64_t>(1, std::llround(static_cast<double>(arr.concurrency) / static_cast<double>(replicas))) : 0;
  Core core = run(ctx, plan, steps, reqs, arr.kind, users);
  if (!core.res.feasible) return core.res;
  res = core.res;
  res.kv_tokens = steps.kv_tokens();
  std::vector<double> ttft, tpot, e2e;
  double out_tok = 0, in_tok = 0, q = 0, p = 0, d = 0;
  for (const RequestRecord& r : core.rec) {
    ttft.push_back((r.first_token_s - r.arrival_s) * 1e3);
    e2e.push_back((r.finish_s - r.arrival_s) * 1e3);
    if (r.output > 1) tpot.push_back((r.finish_s - r.first_token_s) * 1e3 / static_cast<double>(r.output - 1));
    out_tok += static_cast<double>(r.output);
    in_tok += static_cast<double>(r.input);
    q += r.admitted_s - r.arrival_s;
    p += r.first_token_s - r.admitted_s;
    d += r.finish_s - r.first_token_s;
  }
  const double nreq = static_cast<double>(core.rec.size());
  res.queue_ms = q / nreq * 1e3;
  res.prefill_ms = p / nreq * 1e3;
  res.decode_ms = d / nreq * 1e3;
  res.ttft_ms = latency_stats(ttft);
  res.tpot_ms = latency_stats(tpot);
  res.e2e_ms = latency_stats(e2e);
  const double gpus = static_cast<double>(plan.deg.instance_gpus());
  const double span = std::max(res.makespan_s, 1e-12);
  res.output_tok_s_per_gpu = out_tok / span / gpus;
  res.total_tok_s_per_gpu = (out_tok + in_tok) / span / gpus;
  res.requests_per_s = nreq / span * static_cast<double>(replicas);
  // goodput: requests within the tightest bound on each latency (DistServe's definition)
  const auto ttft_b = tightest_slo(w.ttft_ms, w.ttft_pct), tpot_b = tightest_slo(w.tpot_ms, w.tpot_pct);
  std::int64_t good = 0;
  for (const RequestRecord& r : core.rec) {
    const double tt = (r.first_token_s - r.arrival_s) * 1e3;
    const double tp = r.output > 1 ? (r.finish_s - r.first_token_s) * 1e3 / static_cast<double>(r.output - 1) : 0.0;
    good += (!ttft_b || tt <= ttft_b->ms) && (!tpot_b || tp <= tpot_b->ms);
  }
  res.goodput_requests_per_s = static_cast<double>(good) / span * static_cast<double>(replicas);
  res.step_evaluations = steps.evaluations();
  // offered load and capacity (the same requests, all queued at once)
  bool overloaded = false;
  if (arr.kind == Arrivals::Kind::kPoisson || arr.kind == Arrivals::Kind::kTrace) {
    if (arr.kind == Arrivals::Kind::kPoisson) {
      res.offered_requests_per_s = arr.rate;
    } else if (reqs.size() > 1 && reqs.back().arrival > 0) {
      res.offered_requests_per_s = static_cast<double>(reqs.size() - 1) / reqs.back().arrival * static_cast<double>(replicas);
    }
    if (opt.measure_capacity) {
      const double rate = saturated_rate(ctx, plan, steps, reqs);
      if (rate > 0) {
        res.capacity_requests_per_s = rate * static_cast<double>(replicas);
        // overloaded: offered above the capacity, and the queue grew over the run (the last
        // quarter of the arrivals waited for admission over four times the first quarter,
        // and over 50 ms): a short run's capacity is a lower bound, so both must hold
        const std::size_t n = core.rec.size(), quarter = std::max<std::size_t>(1, n / 4);
        double first = 0, last = 0;
        std::vector<const RequestRecord*> by_arrival;
        for (const RequestRecord& r : core.rec) by_arrival.push_back(&r);
        std::stable_sort(by_arrival.begin(), by_arrival.end(), [](const RequestRecord* x, const RequestRecord* y) { return x->arrival_s < y->arrival_s; });
        for (std::size_t i = 0; i < quarter; ++i) {
          first += by_arrival[i]->admitted_s - by_arrival[i]->arrival_s;
          last += by_arrival[n - 1 - i]->admitted_s - by_arrival[n - 1 - i]->arrival_s;
        }
        first /= static_cast<double>(quarter);
        last /= static_cast<double>(quarter);
        res.queue_growth_ms = (last - first) * 1e3;
        overloaded = res.offered_requests_per_s > res.capacity_requests_per_s && last > 4.0 * first && last > 0.05;
      }
      res.step_evaluations = steps.evaluations();
    }
  }
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
  if (opt.keep_records) res.records = std::move(core.rec);
  return res;
}

}  // namespace shardwise
