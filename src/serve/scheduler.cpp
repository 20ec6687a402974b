// One instance's scheduler and the request generator (serve/scheduler.hpp).
#include "serve/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
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

// One instance's scheduler, iteration by iteration.
Instance::Instance(const SimContext& ctx, const Plan& plan, StepTimes& steps)
    : eng_(ctx.engine), steps_(steps), first_arrival_(std::numeric_limits<double>::infinity()) {
  const Workload& w = ctx.workload;
  const std::int64_t a = std::max<std::int64_t>(1, plan.deg.attn_dp);
  const std::int64_t lanes = scheduler_lanes(eng_, plan.deg);  // attention-DP ranks (x micro-batches)
  block_ = std::max<std::int64_t>(1, eng_.kv_block_tokens);
  total_blocks_ = steps.kv_tokens() / block_;
  watermark_ = eng_.reserve_full_kv ? 0 : total_blocks_ / 100;  // vLLM keeps 1% free for admissions
  chunk_max_ = std::max<std::int64_t>(1, eng_.max_num_tokens);  // one lane's budget: a request runs in one
  budget0_ = chunk_max_ * lanes;
  cap_ = std::max<std::int64_t>(1, eng_.max_num_seqs) * lanes;
  tps_ = tokens_per_step(w);
  dec_tokens_ = 1 + w.spec_tokens;
  run_steps_ = std::max<std::int64_t>(1, eng_.decode_steps);
  free_blocks_ = total_blocks_;
  a_ = a;
}

// TensorRT-LLM's _balance_adp_requests over the pooled DP groups: every group has a prompt
// when at least a_ wait (requests go to the least loaded group) and a slot is free; every
// group decodes when at least a_ sequences decode. Returns whether this iteration's new
// prompts are held back.
bool Instance::adp_hold(std::int64_t decoding) {
  if (eng_.adp_timeout_iters <= 0 || a_ <= 1) return false;
  // prompts only: a disaggregated decode pool's arrivals (ready, prefilled elsewhere) are
  // generation requests, which TensorRT-LLM never holds
  std::int64_t prompts = 0;
  for (std::int64_t r : waiting_) prompts += ready_[static_cast<std::size_t>(r)] == 0 ? 1 : 0;
  const bool all_prompts = prompts >= a_ && static_cast<std::int64_t>(running_.size()) < cap_;
  const bool all_decode = decoding >= a_;
  if (all_prompts) {
    adp_waited_ = 0;
    if (!all_decode) return false;
    if (adp_batched_ < eng_.adp_wait_iters) {
      ++adp_batched_;
      return true;
    }
    adp_batched_ = 0;
    return false;
  }
  ++adp_waited_;
  if (adp_waited_ >= eng_.adp_timeout_iters || !all_decode) {
    adp_waited_ = 0;
    return false;
  }
  return true;
}

// A scheduling pass that computes nothing; a stall once kMaxNoWorkPasses of them follow each
// other (every legitimate run of them is short: a preemption per pass at most frees a request's
// blocks, a held decision releases at the next), so that no engine trait can spin the clock
// in place forever.
Instance::Step Instance::no_work() {
  return ++no_work_run_ > kMaxNoWorkPasses ? Step::kStalled : Step::kNoWork;
}

std::int64_t decode_target(const EngineTraits& e, std::int64_t n) {
  if (n >= e.decode_target_max) return e.decode_target_max;
  const std::int64_t step = std::max<std::int64_t>(1, e.decode_target_step);
  if (n >= e.decode_target_min) return n / step * step;
  return e.decode_target_min;
}

std::int64_t Instance::add(const Req& r) {
  RequestRecord x;
  x.input = r.isl;
  x.output = r.osl;
  x.arrival_s = r.arrival;
  x.admitted_s = x.first_token_s = -1;
  double g = 0;
  if (r.ready) {  // prefilled elsewhere: its first token is out, its KV arrives with it
    g = 1.0;
    x.first_token_s = r.arrival;
  }
  out_.rec.push_back(x);
  prompt_.push_back(r.isl);
  done_.push_back(0);
  blocks_.push_back(0);
  preempted_at_.push_back(-1);
  gen_.push_back(g);
  base_.push_back(0.0);
  finished_.push_back(0);
  batch_of_.push_back(0);
  ready_.push_back(r.ready ? 1 : 0);
  return static_cast<std::int64_t>(out_.rec.size()) - 1;
}

void Instance::arrive(std::int64_t i, double at) {
  if (!busy()) t_ = std::max(t_, at);
  auto& r = out_.rec[static_cast<std::size_t>(i)];
  r.arrival_s = at;
  if (ready_[static_cast<std::size_t>(i)] != 0) r.first_token_s = at;
  first_arrival_ = std::min(first_arrival_, at);
  in_sys_ += t_ - at;  // waited since its arrival inside the last iteration
  waiting_.push_back(i);
}

std::int64_t Instance::preempt_last() {
  const std::int64_t v = running_.back();
  running_.pop_back();
  const auto u = static_cast<std::size_t>(v);
  free_blocks_ += blocks_[u];
  blocks_[u] = 0;
  done_[u] = 0;
  prompt_[u] = out_.rec[u].input + static_cast<std::int64_t>(gen_[u]);  // recomputed: prompt and output so far
  base_[u] = static_cast<double>(static_cast<std::int64_t>(gen_[u]));
  preempted_at_[u] = iterations_;
  ++out_.rec[u].preemptions;
  ++preemptions_;
  waiting_.push_front(v);
  return v;
}

// Grows r's blocks to hold `tokens`, preempting the newest running requests; false if r itself was preempted.
bool Instance::grow(std::int64_t r, std::int64_t tokens) {
  const auto u = static_cast<std::size_t>(r);
  if (eng_.reserve_full_kv || tokens <= blocks_[u] * block_) return true;  // the blocks it holds suffice
  const std::int64_t need = blocks_for(tokens) - blocks_[u];
  while (need > free_blocks_) {
    if (preempt_last() == r) return false;
  }
  if (need > 0) {
    free_blocks_ -= need;
    blocks_[u] += need;
  }
  return true;
}

void Instance::finish(std::int64_t r) {
  const auto u = static_cast<std::size_t>(r);
  out_.rec[u].finish_s = t_;
  finished_[u] = 1;
  free_blocks_ += blocks_[u];
  blocks_[u] = 0;
  ++completed_;
  just_finished_.push_back(r);
}

Instance::Step Instance::step() {
  just_finished_.clear();
  just_first_.clear();
  dec_.clear();
  pre_idx_.clear();
  pre_tok_.clear();
  std::int64_t budget = budget0_;
  double ctx_sum = 0;  // the decodes' contexts
  const bool locked = run_left_ > 0;
  // 1. the running requests, oldest first: a prompt's next chunk, or a decode
  bool prefilling = false, chunk_blocked = false;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    const std::int64_t r = running_[i];
    const auto u = static_cast<std::size_t>(r);
    if (done_[u] < prompt_[u]) {
      if (budget <= 0 || locked) continue;
      const std::int64_t c = std::min({prompt_[u] - done_[u], budget, chunk_max_});
      if (eng_.prefill_first && !eng_.reserve_full_kv && blocks_for(done_[u] + c) - blocks_[u] > free_blocks_) {
        // no blocks for the next chunk: the running requests decode this iteration and free some
        // (a prefill-first engine that preempted here could retake the prompt forever)
        chunk_blocked = true;
        continue;
      }
      if (!grow(r, done_[u] + c)) break;
      pre_idx_.push_back(r);
      pre_tok_.push_back(c);
      budget -= c;
      prefilling = true;
    } else if (!eng_.prefill_first) {
      if (budget < dec_tokens_) continue;
      if (!grow(r, done_[u] + static_cast<std::int64_t>(std::ceil(gen_[u] - base_[u] + tps_)))) break;
      dec_.push_back(r);
      ctx_sum += static_cast<double>(done_[u]) + gen_[u] - base_[u];
      budget -= dec_tokens_;
    }
  }
  // 2. waiting requests, first come first served, while the cap, the budget and the KV cache allow
  const bool had_waiting = !waiting_.empty();
  bool kv_blocked = false, admitted_ready = false;
  const bool held = adp_hold(static_cast<std::int64_t>(dec_.size()));
  // a decode-batch target (prefill-first engines): at a scheduling decision, prompts only while
  // fewer than the maximum run and the KV cache keeps its reserve free, and, with fewer than
  // prefill_min_waiting waiting, only if the last decision held them (the patch's _do_prefill)
  const bool target = eng_.decode_target_max > 0 && eng_.prefill_first;
  bool target_hold = false;
  if (target && !locked) {
    // (the KV reserve binds only while something runs: an idle instance always admits)
    bool admit = static_cast<std::int64_t>(running_.size()) < eng_.decode_target_max &&
                 (running_.empty() || free_blocks_ * block_ > eng_.prefill_min_free_tokens);
    admit = admit && (static_cast<std::int64_t>(waiting_.size()) >= eng_.prefill_min_waiting || target_held_);
    target_held_ = !admit;
    target_hold = !admit;
  }
  // (no admission while a running prompt waits for blocks: the decodes must free them first)
  while (!locked && !target_hold && !waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < cap_ && !chunk_blocked) {
    const std::int64_t r = waiting_.front();
    const auto u = static_cast<std::size_t>(r);
    if (preempted_at_[u] == iterations_) break;  // preempted this iteration: back in a later one
    const bool cached = ready_[u] != 0;
    if (held && !cached) break;  // attention-DP balancing holds the prompts (in arrival order)
    const std::int64_t c = cached ? 0 : std::min({prompt_[u], budget, chunk_max_});
    const std::int64_t hold = cached ? prompt_[u] + 1 : c;  // a cached prompt and its first token
    const std::int64_t need =
        eng_.reserve_full_kv ? blocks_for(prompt_[u] + out_.rec[u].output - static_cast<std::int64_t>(gen_[u])) : blocks_for(hold);
    const std::int64_t keep = running_.empty() ? 0 : watermark_;
    if (need + keep > free_blocks_) {
      kv_blocked = true;
      break;
    }
    waiting_.pop_front();
    free_blocks_ -= need;
    blocks_[u] += need;
    if (out_.rec[u].admitted_s < 0) out_.rec[u].admitted_s = t_;
    running_.push_back(r);
    if (cached) {  // decodes from the next iteration on
      ready_[u] = 0;
      done_[u] = prompt_[u];
      admitted_ready = true;
      continue;
    }
    pre_idx_.push_back(r);
    pre_tok_.push_back(c);
    budget -= c;
    prefilling = true;
  }
  if (had_waiting) {
    ++waiting_iters_;
    kv_blocked_iters_ += kv_blocked;
    cap_iters_ += !kv_blocked && !waiting_.empty() && static_cast<std::int64_t>(running_.size()) >= cap_;
  }
  // prefill-first engines decode only when no prompt is scheduled
  if (eng_.prefill_first && !prefilling) {
    // under a decode-batch target, a decision takes the oldest decode_target(n) running
    // sequences as its batch, and the multi-step run it starts decodes that batch alone (vLLM's
    // multi-step run keeps its sequence groups; one that finishes leaves and none joins)
    std::int64_t most = std::numeric_limits<std::int64_t>::max();
    if (target && !locked) {
      ++decision_;
      most = decode_target(eng_, static_cast<std::int64_t>(running_.size()));
    }
    for (std::size_t i = 0; i < running_.size() && static_cast<std::int64_t>(dec_.size()) < most; ++i) {
      const std::int64_t r = running_[i];
      const auto u = static_cast<std::size_t>(r);
      if (done_[u] < prompt_[u]) continue;  // a prompt waiting for blocks (chunk_blocked) does not decode
      if (target && locked && batch_of_[u] != decision_) continue;  // not in this run's batch
      if (!grow(r, done_[u] + static_cast<std::int64_t>(std::ceil(gen_[u] - base_[u] + tps_)))) break;
      dec_.push_back(r);
      if (target && !locked) batch_of_[u] = decision_;
      ctx_sum += static_cast<double>(done_[u]) + gen_[u] - base_[u];
    }
  }
  std::int64_t ptok = 0;
  for (std::int64_t c : pre_tok_) ptok += c;
  if (locked && dec_.empty()) {  // nothing left to decode in this run: the scheduler decides again
    run_left_ = 0;
    return no_work();
  }
  if (dec_.empty() && ptok == 0 && admitted_ready) return no_work();  // nothing to compute until the next iteration
  if (dec_.empty() && ptok == 0 && chunk_blocked && running_.size() > 1) {
    preempt_last();  // prompts hold every block and none can go on: the newest gives its blocks back
    return no_work();
  }
  // the target held the prompts with nothing to decode: the next decision admits them (the
  // alternation; an idle instance always admits), unless a prompt waits for blocks (a stall)
  if (dec_.empty() && ptok == 0 && target_hold && !chunk_blocked) return no_work();
  if (dec_.empty() && ptok == 0) return Step::kStalled;
  const auto nd = static_cast<std::int64_t>(dec_.size());
  const double c_mean = nd > 0 ? ctx_sum / static_cast<double>(nd) : 0.0;
  const auto np = static_cast<std::int64_t>(pre_idx_.size());
  const double dt = eng_.prefill_first && ptok > 0 ? steps_.prefill(ptok, np) : steps_.mixed(nd, c_mean, ptok, np);
  const bool saturated = completed_ > 0 && !waiting_.empty();  // a request still waits after admission
  if (saturated) {
    std::int64_t first_tokens = 0;  // prompts that end in this iteration (each yields a token)
    for (std::size_t k = 0; k < pre_idx_.size(); ++k) {
      const auto u = static_cast<std::size_t>(pre_idx_[k]);
      first_tokens += done_[u] + pre_tok_[k] >= prompt_[u] ? 1 : 0;
    }
    ++out_.sat_iters;
    out_.sat_s += dt;
    out_.sat_tokens += static_cast<double>(nd) * tps_ + static_cast<double>(first_tokens);
  }
  in_sys_ += static_cast<double>(running_.size() + waiting_.size()) * dt;
  run_int_ += static_cast<double>(running_.size()) * dt;
  t_ += dt;
  ++iterations_;
  // an iteration that decodes at a scheduling decision starts a run of decode_steps
  if (locked) {
    --run_left_;
  } else if (nd > 0) {
    run_left_ = run_steps_ - 1;
  }
  for (std::int64_t r : dec_) {
    const auto u = static_cast<std::size_t>(r);
    gen_[u] += tps_;
    if (gen_[u] >= static_cast<double>(out_.rec[u].output) - 1e-9) finish(r);
  }
  for (std::size_t k = 0; k < pre_idx_.size(); ++k) {
    const std::int64_t r = pre_idx_[k];
    const auto u = static_cast<std::size_t>(r);
    done_[u] += pre_tok_[k];
    if (done_[u] < prompt_[u]) continue;
    if (out_.rec[u].first_token_s < 0) {
      out_.rec[u].first_token_s = t_;
      just_first_.push_back(r);
    }
    gen_[u] += 1.0;  // the prompt's last chunk yields the next token
    if (gen_[u] >= static_cast<double>(out_.rec[u].output) - 1e-9) finish(r);
  }
  if (!just_finished_.empty()) std::erase_if(running_, [&](std::int64_t r) { return finished_[static_cast<std::size_t>(r)] != 0; });
  no_work_run_ = 0;
  return Step::kRan;
}

Core Instance::result() && {
  ServeResult& res = out_.res;
  const auto n = static_cast<std::int64_t>(out_.rec.size());
  res.iterations = iterations_;
  res.preemptions = preemptions_;
  res.events = iterations_ + 2 * n;
  const double makespan = t_ - (std::isfinite(first_arrival_) ? first_arrival_ : 0.0);
  res.makespan_s = makespan;
  res.mean_in_system = makespan > 0 ? in_sys_ / makespan : 0.0;
  res.mean_running = makespan > 0 ? run_int_ / makespan : 0.0;
  res.kv_blocked_share = waiting_iters_ > 0 ? static_cast<double>(kv_blocked_iters_) / static_cast<double>(waiting_iters_) : 0.0;
  res.seq_cap_share = waiting_iters_ > 0 ? static_cast<double>(cap_iters_) / static_cast<double>(waiting_iters_) : 0.0;
  res.requests = n;
  return std::move(out_);
}

// The scheduler over one instance's requests.
Core run(const SimContext& ctx, const Plan& plan, StepTimes& steps, const std::vector<Req>& reqs, Arrivals::Kind kind,
         std::int64_t users, Watch* watch) {
  const std::int64_t n = static_cast<std::int64_t>(reqs.size());
  Instance in(ctx, plan, steps);
  for (const Req& r : reqs) in.add(r);
  const bool closed = kind == Arrivals::Kind::kClosed;
  std::int64_t next = 0;
  if (closed) {
    for (; next < std::min(users, n); ++next) in.arrive(next, 0.0);
  }
  while (in.completed() < n) {
    if (watch && (in.iterations() & 1023) == 0) {
      // the statistics that follow a run (sorting every latency) are kept inside the limit too
      if (watch->should_stop(kStatsSecondsPerRequest * static_cast<double>(n))) {
        Core out;
        out.res.feasible = false;
        out.res.stopped = true;
        out.res.reason = fmt::format("by {} after {:.1f} s, {} of {} requests of one instance done", watch->stop_text(), watch->elapsed_s(),
                                     in.completed(), n);
        return out;
      }
      watch->progress([&] {
        return fmt::format("simulating requests: {} of {} done ({} iterations), {:.0f} s", in.completed(), n, in.iterations(),
                           watch->elapsed_s());
      });
    }
    if (!closed) {
      while (next < n && reqs[static_cast<std::size_t>(next)].arrival <= in.now()) {
        in.arrive(next, reqs[static_cast<std::size_t>(next)].arrival);
        ++next;
      }
    }
    if (!in.busy()) {
      if (next >= n) break;  // nothing left (cannot happen while completed < n)
      in.idle_until(reqs[static_cast<std::size_t>(next)].arrival);  // idle until the next arrival
      continue;
    }
    const Instance::Step s = in.step();
    // a step of no finite length would stop the clock (and every arrival after it) for good
    SW_CHECK(std::isfinite(in.now()), "the serving simulation's clock is not finite (a step time that is not a number)");
    if (s == Instance::Step::kStalled) {
      Core out;
      out.res.feasible = false;
      out.res.reason = "the scheduler stalled: no request could be scheduled (an internal error; please report it)";
      return out;
    }
    if (closed) {  // each user's next request
      for (std::size_t k = 0; k < in.finished().size() && next < n; ++k) in.arrive(next++, in.now());
    }
  }
  return std::move(in).result();
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
  const std::int64_t slots = std::max<std::int64_t>(1, ctx.engine.max_num_seqs) * scheduler_lanes(ctx.engine, plan.deg);
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
