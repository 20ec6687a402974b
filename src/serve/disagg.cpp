#include "serve/disagg.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <tuple>

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

namespace {

// One run of both pools over the deployment's requests: each request's record (arrival and
// admission in the prefill pool, its first token there, its finish in the decode pool), the
// decode pool's own records, and the pools' sums.
struct PoolsRun {
  bool ok = true, stopped = false;
  std::string reason;
  std::vector<RequestRecord> rec, dec_recs;
  double prefill_wait_s = 0, decode_wait_s = 0, transfer_s = 0, kv_mb = 0;
  std::size_t decoded = 0;  // requests that reached the decode pool
  std::int64_t iterations = 0, preemptions = 0;
};

PoolsRun failed(const std::string& pool, const ServeResult& r) {
  PoolsRun out;
  out.ok = false;
  out.stopped = r.stopped;
  out.reason = pool + r.reason;
  return out;
}
PoolsRun failed(const std::string& pool, const std::string& reason, bool stopped = false) {
  ServeResult r;
  r.stopped = stopped;
  r.reason = reason;
  return failed(pool, r);
}

// Open arrivals (Poisson, a trace, all at once): the pools run one after the other, as
// nothing in the decode pool feeds back into the prefill pool's arrivals. Request i goes to
// prefill instance i mod x; the decode pool takes them in order of arrival there, j mod y.
PoolsRun open_pools(const SimContext& ctx, const SimContext& pc, const SimContext& dc, const DisaggPlan& d, StepTimes& sp, StepTimes& sd,
                    const std::vector<Req>& reqs, Arrivals::Kind kind, Watch* watch) {
  PoolsRun out;
  const auto x = static_cast<std::size_t>(std::max<std::int32_t>(1, d.prefill.deg.replicas));
  const auto y = static_cast<std::size_t>(std::max<std::int32_t>(1, d.decode.deg.replicas));
  auto& rec = out.rec;
  rec.resize(reqs.size());
  std::vector<std::vector<std::size_t>> owner(x);
  for (std::size_t i = 0; i < reqs.size(); ++i) owner[i % x].push_back(i);
  for (std::size_t k = 0; k < x; ++k) {
    std::vector<Req> mine;
    for (std::size_t i : owner[k]) mine.push_back(Req{reqs[i].arrival, reqs[i].isl, 1, false});
    if (mine.empty()) continue;
    const Core c = run(pc, d.prefill, sp, mine, kind, 0, watch);
    if (!c.res.feasible) return failed("prefill pool: ", c.res);
    out.iterations += c.res.iterations;
    out.preemptions += c.res.preemptions;
    for (std::size_t j = 0; j < owner[k].size(); ++j) {
      RequestRecord& r = rec[owner[k][j]];
      r = c.rec[j];
      r.input = reqs[owner[k][j]].isl;
      r.output = reqs[owner[k][j]].osl;
      out.prefill_wait_s += r.admitted_s - r.arrival_s;
    }
  }
  // the KV cache travels; then the decode pool, in order of arrival there
  std::vector<std::pair<double, std::size_t>> at_decode;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const double bytes = kv_transfer_bytes(ctx, reqs[i].isl);
    const double t = kv_transfer_s(ctx, d, bytes);
    out.transfer_s += t;
    out.kv_mb += bytes / 1e6;
    if (reqs[i].osl > 1) at_decode.emplace_back(rec[i].first_token_s + t, i);
    else rec[i].finish_s = rec[i].first_token_s;
  }
  std::stable_sort(at_decode.begin(), at_decode.end());
  std::vector<std::vector<std::size_t>> dec_owner(y);
  std::vector<std::vector<double>> dec_at(y);
  for (std::size_t j = 0; j < at_decode.size(); ++j) {
    dec_owner[j % y].push_back(at_decode[j].second);
    dec_at[j % y].push_back(at_decode[j].first);
  }
  out.decoded = at_decode.size();
  for (std::size_t k = 0; k < y; ++k) {
    std::vector<Req> mine;
    for (std::size_t j = 0; j < dec_owner[k].size(); ++j) {
      const std::size_t i = dec_owner[k][j];
      mine.push_back(Req{dec_at[k][j], reqs[i].isl, reqs[i].osl, true});
    }
    if (mine.empty()) continue;
    const Core c = run(dc, d.decode, sd, mine, Arrivals::Kind::kTrace, 0, watch);
    if (!c.res.feasible) return failed("decode pool: ", c.res);
    out.iterations += c.res.iterations;
    out.preemptions += c.res.preemptions;
    for (std::size_t j = 0; j < dec_owner[k].size(); ++j) {
      rec[dec_owner[k][j]].finish_s = c.rec[j].finish_s;
      out.decode_wait_s += c.rec[j].admitted_s - c.rec[j].arrival_s;
      out.dec_recs.push_back(c.rec[j]);
    }
  }
  return out;
}

// Closed-loop users (docs/serving.md, "Disaggregated prefill and decode"): each user sends
// its next request when the decode pool finishes its last one, so the pools run together.
// Every instance keeps its own clock; the arrivals between them (a user's request at the
// prefill pool, a prompt's KV at the decode pool) wait in one queue of events by time. The
// next thing to happen is the earliest event, delivered when no busy instance's clock is
// earlier (an instance busy past it admits it at its next iteration, as an engine does), or
// else an iteration of the busy instance with the earliest clock. Routing as open_pools.
PoolsRun closed_pools(const SimContext& ctx, const SimContext& pc, const SimContext& dc, const DisaggPlan& d, StepTimes& sp,
                      StepTimes& sd, const std::vector<Req>& reqs, std::int64_t users, Watch* watch) {
  PoolsRun out;
  const auto x = static_cast<std::size_t>(std::max<std::int32_t>(1, d.prefill.deg.replicas));
  const auto y = static_cast<std::size_t>(std::max<std::int32_t>(1, d.decode.deg.replicas));
  const std::size_t n = reqs.size();
  std::vector<Instance> pre, dec;
  pre.reserve(x);
  dec.reserve(y);
  for (std::size_t k = 0; k < x; ++k) pre.emplace_back(pc, d.prefill, sp);
  for (std::size_t k = 0; k < y; ++k) dec.emplace_back(dc, d.decode, sd);
  std::vector<std::vector<std::size_t>> pre_global(x), dec_global(y);  // local index -> request
  auto& rec = out.rec;
  rec.resize(n);
  // the events: (time, order of creation, request, true: to the decode pool)
  using Event = std::tuple<double, std::size_t, std::size_t, bool>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::size_t next = 0, created = 0, to_decode = 0, completed = 0;
  const auto issue = [&](double at) {  // a user's next request
    if (next < n) events.emplace(at, created++, next++, false);
  };
  for (std::int64_t u = 0; u < users; ++u) issue(0.0);
  std::int64_t steps = 0;
  while (completed < n) {
    if (watch && (steps & 1023) == 0) {
      if (watch->should_stop(kStatsSecondsPerRequest * static_cast<double>(n))) {
        return failed("", fmt::format("by {} after {:.1f} s, {} of {} requests done", watch->stop_text(), watch->elapsed_s(), completed, n),
                      true);
      }
      watch->progress([&] { return fmt::format("simulating requests: {} of {} done, {:.0f} s", completed, n, watch->elapsed_s()); });
    }
    ++steps;
    Instance* first = nullptr;
    bool first_is_prefill = false;
    std::size_t first_k = 0;
    for (std::size_t k = 0; k < x + y; ++k) {
      Instance& in = k < x ? pre[k] : dec[k - x];
      if (in.busy() && (first == nullptr || in.now() < first->now())) {
        first = &in;
        first_is_prefill = k < x;
        first_k = k < x ? k : k - x;
      }
    }
    const double busy_at = first ? first->now() : std::numeric_limits<double>::infinity();
    if (!events.empty() && std::get<0>(events.top()) <= busy_at) {
      const auto [at, order, i, decode] = events.top();
      events.pop();
      if (decode) {
        const std::size_t k = to_decode++ % y;
        dec_global[k].push_back(i);
        dec[k].arrive(dec[k].add(Req{at, reqs[i].isl, reqs[i].osl, true}), at);
      } else {
        const std::size_t k = i % x;
        pre_global[k].push_back(i);
        pre[k].arrive(pre[k].add(Req{at, reqs[i].isl, 1, false}), at);
      }
      continue;
    }
    if (first == nullptr) return failed("", "the pools stalled with requests left (an internal error; please report it)");
    const Instance::Step s = first->step();
    if (s == Instance::Step::kStalled) {
      return failed(first_is_prefill ? "prefill pool: " : "decode pool: ",
                    "the scheduler stalled: no request could be scheduled (an internal error; please report it)");
    }
    if (s != Instance::Step::kRan) continue;
    for (const std::int64_t local : first->finished()) {
      const double now = first->now();
      if (first_is_prefill) {  // the prompt and its first token: the KV travels, or the request is done
        const std::size_t i = pre_global[first_k][static_cast<std::size_t>(local)];
        RequestRecord& r = rec[i];
        r = first->record(local);
        r.output = reqs[i].osl;
        const double bytes = kv_transfer_bytes(ctx, reqs[i].isl);
        const double t = kv_transfer_s(ctx, d, bytes);
        out.transfer_s += t;
        out.kv_mb += bytes / 1e6;
        out.prefill_wait_s += r.admitted_s - r.arrival_s;
        if (reqs[i].osl > 1) {
          events.emplace(now + t, created++, i, true);
        } else {
          ++completed;
          issue(now);
        }
      } else {
        const std::size_t i = dec_global[first_k][static_cast<std::size_t>(local)];
        rec[i].finish_s = now;
        ++completed;
        issue(now);
      }
    }
  }
  for (Instance& in : pre) {
    const Core c = std::move(in).result();
    out.iterations += c.res.iterations;
    out.preemptions += c.res.preemptions;
  }
  for (Instance& in : dec) {
    Core c = std::move(in).result();
    out.iterations += c.res.iterations;
    out.preemptions += c.res.preemptions;
    for (const RequestRecord& r : c.rec) {
      out.decode_wait_s += r.admitted_s - r.arrival_s;
      out.dec_recs.push_back(r);
    }
  }
  out.decoded = out.dec_recs.size();
  return out;
}

}  // namespace

SimContext pool_context(const SimContext& ctx, const PoolSettings& s) {
  SimContext c = ctx;
  if (s.max_num_seqs > 0) c.engine.max_num_seqs = s.max_num_seqs;
  if (s.max_num_tokens > 0) c.engine.max_num_tokens = s.max_num_tokens;
  return c;
}

DisaggResult simulate_disaggregated(const SimContext& ctx, const DisaggPlan& d, const ServeOptions& opt) {
  DisaggResult out;
  ServeResult& res = out.total;
  const Workload& w = ctx.workload;
  const Arrivals::Kind kind = w.serve.arrivals.kind;
  const bool closed = kind == Arrivals::Kind::kClosed;
  // each pool with its engine settings (a copy of the context only where a pool has its own)
  std::optional<SimContext> own_p, own_d;
  if (d.prefill_settings != PoolSettings{}) own_p = pool_context(ctx, d.prefill_settings);
  if (d.decode_settings != PoolSettings{}) own_d = pool_context(ctx, d.decode_settings);
  const SimContext& pc = own_p ? *own_p : ctx;
  const SimContext& dc = own_d ? *own_d : ctx;
  StepTimes sp(pc, d.prefill), sd(dc, d.decode);
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
  const std::int64_t users = closed ? std::max<std::int64_t>(1, w.serve.arrivals.concurrency) : 0;
  // without a request count, the length doubles until the window's halves agree (as one
  // plan's simulation does; the same seed: each run extends the last one's requests)
  const bool auto_length = w.serve.requests == 0 && (kind == Arrivals::Kind::kPoisson || closed);
  const std::int64_t most = kMaxAutoRequests * static_cast<std::int64_t>(std::max(x, y));
  std::vector<Req> cur = reqs;
  Workload grown = w;
  PoolsRun pr;
  for (int runs = 1;; ++runs) {
    const double run_started = opt.watch ? opt.watch->elapsed_s() : 0.0;
    pr = closed ? closed_pools(ctx, pc, dc, d, sp, sd, cur, users, opt.watch) : open_pools(ctx, pc, dc, d, sp, sd, cur, kind, opt.watch);
    if (!pr.ok) {
      res.feasible = false;
      res.stopped = pr.stopped;
      res.reason = pr.reason;
      return out;
    }
    const double run_took = opt.watch ? opt.watch->elapsed_s() - run_started : 0.0;
    double first = 1e300, last = 0;
    for (const RequestRecord& r : pr.rec) {
      first = std::min(first, r.arrival_s);
      last = std::max(last, r.finish_s);
    }
    res = ServeResult{};
    res.kv_tokens = sd.kv_tokens();
    res.makespan_s = last - first;
    res.requests = static_cast<std::int64_t>(cur.size());
    res.iterations = pr.iterations;
    res.preemptions = pr.preemptions;
    res.events = res.iterations + 2 * res.requests;
    summarize(w, pr.rec, static_cast<double>(d.gpus()), 1.0, res);
    res.length_runs = runs;
    // occupancy over the deployment: in the system (Little's law over the records), and decoding
    // (inside the steady-state window when summarize measured one: Little's law holds there)
    double in_sys = 0, decoding = 0;
    const double w0 = res.window_s > 0 ? res.window_start_s : first, w1 = res.window_s > 0 ? res.window_start_s + res.window_s : last;
    for (const RequestRecord& r : pr.rec) {
      in_sys += std::max(0.0, std::min(r.finish_s, w1) - std::max(r.arrival_s, w0));
      decoding += std::max(0.0, std::min(r.finish_s, w1) - std::max(r.first_token_s, w0));
    }
    const double span = w1 - w0;
    res.mean_in_system = span > 0 ? in_sys / span : 0.0;
    res.mean_running = span > 0 ? decoding / span : 0.0;
    if (!auto_length || res.stable || 2 * static_cast<std::int64_t>(cur.size()) > most) break;
    // a queue that grows over the run is an overload, not a transient: no length makes it steady
    double growth = 0;
    if (queue_grew(pr.rec, growth) || queue_grew(pr.dec_recs, growth)) break;
    if (opt.watch && opt.watch->remaining_s() < 2.5 * run_took) break;
    grown.serve.requests = 2 * static_cast<std::int64_t>(cur.size());
    cur = make_requests(grown, 1);
  }
  const double n = static_cast<double>(std::max<std::size_t>(1, cur.size()));
  out.transfer_ms = pr.transfer_s / n * 1e3;
  out.kv_mb_per_request = pr.kv_mb / n;
  out.prefill_queue_ms = pr.prefill_wait_s / n * 1e3;
  out.decode_queue_ms = pr.decoded == 0 ? 0.0 : pr.decode_wait_s / static_cast<double>(pr.decoded) * 1e3;
  out.link = link_of(ctx, d).name;
  res.step_evaluations = sp.evaluations() + sd.evaluations();
  // offered load, each pool's capacity, and whether a queue grew
  bool overloaded = false;
  if (kind == Arrivals::Kind::kPoisson) res.offered_requests_per_s = w.serve.arrivals.rate;
  if (kind == Arrivals::Kind::kTrace && cur.size() > 1 && cur.back().arrival > 0) {
    res.offered_requests_per_s = static_cast<double>(cur.size() - 1) / cur.back().arrival;
  }
  if (res.offered_requests_per_s > 0 && opt.measure_capacity) {
    std::vector<Req> pre, dec;
    for (std::size_t i = 0; i < cur.size(); i += x) pre.push_back(Req{0, cur[i].isl, 1, false});
    for (std::size_t i = 0; i < cur.size(); i += y) dec.push_back(Req{0, cur[i].isl, cur[i].osl, true});
    out.prefill_capacity = saturated_rate(pc, d.prefill, sp, pre, opt.watch) * static_cast<double>(x);
    out.decode_capacity = saturated_rate(dc, d.decode, sd, dec, opt.watch) * static_cast<double>(y);
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
    const bool grew = queue_grew(pr.rec, g1) || queue_grew(pr.dec_recs, g2);
    res.queue_growth_ms = std::max(g1, g2);
    // no queue stays bounded above the capacity (under kMinWindowed requests the capacity is
    // only a lower bound: the queue must also have grown)
    overloaded = res.offered_requests_per_s > res.capacity_requests_per_s &&
                 (static_cast<std::int64_t>(cur.size()) >= kMinWindowed || grew);
    if (overloaded && res.window_s > 0) cap_at_capacity(res);
  }
  judge(w, overloaded, res);
  if (!overloaded) {  // the pools' own shares of the mean request
    res.bottleneck_note += fmt::format("; of it {:.1f} ms waiting in the prefill pool, {:.1f} ms shipping {:.1f} MB of KV over {}, {:.1f} ms waiting in the decode pool",
                                       out.prefill_queue_ms, out.transfer_ms, out.kv_mb_per_request, out.link, out.decode_queue_ms);
  }
  if (opt.keep_records) res.records = std::move(pr.rec);
  return out;
}

}  // namespace shardwise
