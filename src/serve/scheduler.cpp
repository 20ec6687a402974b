// One instance's scheduler and the request generator (serve/scheduler.hpp).
#include "serve/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "core/rng.hpp"

namespace shardwise::serve_detail {

namespace {
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

}  // namespace

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

// The scheduler, iteration by iteration, over one instance's requests.
Core run(const SimContext& ctx, const Plan& plan, StepTimes& steps, const std::vector<Req>& reqs, Arrivals::Kind kind,
         std::int64_t users, Watch* watch) {
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
  const std::int64_t run_steps = std::max<std::int64_t>(1, eng.decode_steps);
  const auto blocks_for = [&](std::int64_t tokens) { return (tokens + B - 1) / B; };

  Core out;
  auto& rec = out.rec;
  rec.resize(static_cast<std::size_t>(n));
  std::vector<std::int64_t> prompt(static_cast<std::size_t>(n)), done(static_cast<std::size_t>(n), 0), blocks(static_cast<std::size_t>(n), 0);
  std::vector<double> gen(static_cast<std::size_t>(n), 0.0);
  // output tokens folded into the prompt by a preemption's recompute: the KV holds
  // done + gen - base tokens (base counted once, as prompt)
  std::vector<double> base(static_cast<std::size_t>(n), 0.0);
  std::vector<std::int64_t> preempted_at(static_cast<std::size_t>(n), -1);  // the iteration of the last preemption
  std::vector<char> finished(static_cast<std::size_t>(n), 0), ready(static_cast<std::size_t>(n), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    rec[u].input = reqs[u].isl;
    rec[u].output = reqs[u].osl;
    rec[u].arrival_s = reqs[u].arrival;
    rec[u].admitted_s = rec[u].first_token_s = -1;
    prompt[u] = reqs[u].isl;
    if (reqs[u].ready) {  // prefilled elsewhere: its first token is out, its KV arrives with it
      ready[u] = 1;
      gen[u] = 1.0;
      rec[u].first_token_s = reqs[u].arrival;
    }
  }
  std::deque<std::int64_t> waiting;
  std::vector<std::int64_t> running, dec, pre_idx, pre_tok;
  std::int64_t free_blocks = total_blocks, completed = 0, next = 0, iterations = 0, preemptions = 0;
  std::int64_t waiting_iters = 0, kv_blocked_iters = 0, cap_iters = 0;
  // iterations left of the current multi-step decode run (EngineTraits::decode_steps): while
  // any are, the running sequences only decode and nothing is admitted
  std::int64_t run_left = 0;
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
    base[u] = static_cast<double>(static_cast<std::int64_t>(gen[u]));
    preempted_at[u] = iterations;
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
    if (watch && (iterations & 1023) == 0) {
      // the statistics that follow a run (sorting every latency) are kept inside the limit too
      if (watch->should_stop(kStatsSecondsPerRequest * static_cast<double>(n))) {
        out.res.feasible = false;
        out.res.stopped = true;
        out.res.reason = fmt::format("by {} after {:.1f} s, {} of {} requests of one instance done", watch->stop_text(), watch->elapsed_s(),
                                     completed, n);
        return out;
      }
      watch->progress([&] {
        return fmt::format("simulating requests: {} of {} done ({} iterations), {:.0f} s", completed, n, iterations, watch->elapsed_s());
      });
    }
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
    const bool locked = run_left > 0;
    // 1. the running requests, oldest first: a prompt's next chunk, or a decode
    bool prefilling = false, chunk_blocked = false;
    for (std::size_t i = 0; i < running.size(); ++i) {
      const std::int64_t r = running[i];
      const auto u = static_cast<std::size_t>(r);
      if (done[u] < prompt[u]) {
        if (budget <= 0 || locked) continue;
        const std::int64_t c = std::min(prompt[u] - done[u], budget);
        if (eng.prefill_first && !eng.reserve_full_kv && blocks_for(done[u] + c) - blocks[u] > free_blocks) {
          // no blocks for the next chunk: the running requests decode this iteration and free some
          // (a prefill-first engine that preempted here could retake the prompt forever)
          chunk_blocked = true;
          continue;
        }
        if (!grow(r, done[u] + c)) break;
        pre_idx.push_back(r);
        pre_tok.push_back(c);
        budget -= c;
        prefilling = true;
      } else if (!eng.prefill_first) {
        if (budget < dec_tokens) continue;
        if (!grow(r, done[u] + static_cast<std::int64_t>(std::ceil(gen[u] - base[u] + tps)))) break;
        dec.push_back(r);
        ctx_sum += static_cast<double>(done[u]) + gen[u] - base[u];
        budget -= dec_tokens;
      }
    }
    // 2. waiting requests, first come first served, while the cap, the budget and the KV cache allow
    const bool had_waiting = !waiting.empty();
    bool kv_blocked = false, admitted_ready = false;
    // (no admission while a running prompt waits for blocks: the decodes must free them first)
    while (!locked && !waiting.empty() && budget > 0 && static_cast<std::int64_t>(running.size()) < cap && !chunk_blocked) {
      const std::int64_t r = waiting.front();
      const auto u = static_cast<std::size_t>(r);
      if (preempted_at[u] == iterations) break;  // preempted this iteration: back in a later one
      const bool cached = ready[u] != 0;
      const std::int64_t c = cached ? 0 : std::min(prompt[u], budget);
      const std::int64_t hold = cached ? prompt[u] + 1 : c;  // a cached prompt and its first token
      const std::int64_t need = eng.reserve_full_kv ? blocks_for(prompt[u] + rec[u].output - static_cast<std::int64_t>(gen[u])) : blocks_for(hold);
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
      if (cached) {  // decodes from the next iteration on
        ready[u] = 0;
        done[u] = prompt[u];
        admitted_ready = true;
        continue;
      }
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
        if (done[u] < prompt[u]) continue;  // a prompt waiting for blocks (chunk_blocked) does not decode
        if (!grow(r, done[u] + static_cast<std::int64_t>(std::ceil(gen[u] - base[u] + tps)))) break;
        dec.push_back(r);
        ctx_sum += static_cast<double>(done[u]) + gen[u] - base[u];
      }
    }
    std::int64_t ptok = 0;
    for (std::int64_t c : pre_tok) ptok += c;
    if (locked && dec.empty()) {  // nothing left to decode in this run: the scheduler decides again
      run_left = 0;
      continue;
    }
    if (dec.empty() && ptok == 0 && admitted_ready) continue;  // nothing to compute until the next iteration
    if (dec.empty() && ptok == 0 && chunk_blocked && running.size() > 1) {
      preempt_last();  // prompts hold every block and none can go on: the newest gives its blocks back
      continue;
    }
    if (dec.empty() && ptok == 0) {
      out.res.feasible = false;
      out.res.reason = "the scheduler stalled: no request could be scheduled (an internal error; please report it)";
      return out;
    }
    const auto nd = static_cast<std::int64_t>(dec.size());
    const double c_mean = nd > 0 ? ctx_sum / static_cast<double>(nd) : 0.0;
    const auto np = static_cast<std::int64_t>(pre_idx.size());
    const double dt = eng.prefill_first && ptok > 0 ? steps.prefill(ptok, np) : steps.mixed(nd, c_mean, ptok, np);
    const bool saturated = completed > 0 && !waiting.empty();  // a request still waits after admission
    if (saturated) {
      std::int64_t first_tokens = 0;  // prompts that end in this iteration (each yields a token)
      for (std::size_t k = 0; k < pre_idx.size(); ++k) {
        const auto u = static_cast<std::size_t>(pre_idx[k]);
        first_tokens += done[u] + pre_tok[k] >= prompt[u] ? 1 : 0;
      }
      ++out.sat_iters;
      out.sat_s += dt;
      out.sat_tokens += static_cast<double>(nd) * tps + static_cast<double>(first_tokens);
    }
    in_sys += static_cast<double>(running.size() + waiting.size()) * dt;
    run_int += static_cast<double>(running.size()) * dt;
    t += dt;
    ++iterations;
    // an iteration that decodes at a scheduling decision starts a run of decode_steps
    if (locked) {
      --run_left;
    } else if (nd > 0) {
      run_left = run_steps - 1;
    }
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

// The saturated completion rate of one instance: the requests all queued at once, repeated
// until the instance stays saturated (a request waiting after every admission) for
// kMinSaturatedIterations after its first completion: doubled up to 8 times the requests
// given or twice the running-sequence cap, whichever is more (at most kMaxBurst);
// then the output tokens of those iterations per second over the requests' mean output (a
// token rate is unbiased by the lengths: the short requests of a burst finish first, so its
// completions alone overstate a heavy-tailed capacity). Never saturated (every request fits
// at once, 8 times over): the completion rate between the 10th and the 90th percentile
// completions of the last run (the whole run's when that window is under half of it), a
// lower bound; 0 when the scheduler cannot run them.
double saturated_rate(const SimContext& ctx, const Plan& plan, StepTimes& steps, std::vector<Req> reqs, Watch* watch) {
  if (reqs.empty()) return 0.0;
  double out_sum = 0;
  for (Req& r : reqs) {
    r.arrival = 0;
    out_sum += static_cast<double>(r.osl - (r.ready ? 1 : 0));  // a decode pool's request arrives with its first token
  }
  const double mean_out = out_sum / static_cast<double>(reqs.size());
  // enough requests to outlast the running-sequence cap twice over (the KV cache may bind first)
  const std::int64_t slots = std::max<std::int64_t>(1, ctx.engine.max_num_seqs) * std::max<std::int64_t>(1, plan.deg.attn_dp);
  const auto most = static_cast<std::size_t>(std::min<std::int64_t>(kMaxBurst, std::max<std::int64_t>(8 * static_cast<std::int64_t>(reqs.size()), 2 * slots)));
  std::vector<Req> burst = reqs;
  while (true) {
    const Core sat = run(ctx, plan, steps, burst, Arrivals::Kind::kBurst, 0, watch);
    if (!sat.res.feasible || sat.res.makespan_s <= 0) return 0.0;
    if (sat.sat_iters >= kMinSaturatedIterations && sat.sat_s > 0 && mean_out > 0) return sat.sat_tokens / sat.sat_s / mean_out;
    if (burst.size() < most) {
      const std::size_t n = burst.size();
      burst.reserve(2 * n);
      for (std::size_t i = 0; i < n && burst.size() < most; ++i) burst.push_back(burst[i]);
      continue;
    }
    std::vector<double> done;
    done.reserve(sat.rec.size());
    for (const RequestRecord& r : sat.rec) done.push_back(r.finish_s);
    std::sort(done.begin(), done.end());
    const std::size_t a = done.size() / 10, b = done.size() - 1 - done.size() / 10;
    if (done.size() >= 20 && done[b] - done[a] >= 0.5 * sat.res.makespan_s) return static_cast<double>(b - a) / (done[b] - done[a]);
    return static_cast<double>(done.size()) / sat.res.makespan_s;
  }
}

}  // namespace shardwise::serve_detail
