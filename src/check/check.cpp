#include "check/check.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "cost/engine.hpp"
#include "serve/disagg.hpp"

namespace shardwise {
namespace {

// Per-request lengths as a histogram of the values seen (the tool's own draw, replayed).
LengthDist histogram_of(const std::vector<std::int64_t>& lens) {
  std::map<std::int64_t, double> counts;
  for (const std::int64_t v : lens) counts[std::max<std::int64_t>(1, v)] += 1.0;
  LengthDist d;
  d.kind = LengthDist::Kind::kHistogram;
  for (const auto& [v, n] : counts) d.bins.emplace_back(v, n);
  d.mean = mean_of(d);
  return d;
}

LengthDist fixed_at(double mean) {
  LengthDist d;
  d.kind = LengthDist::Kind::kFixed;
  d.mean = std::max(1.0, std::round(mean));
  return d;
}

}  // namespace

Expected<PlanDeployment> plan_deployment(const PlanFile& f, const std::string& file, const ModelSpec& model, const ClusterSpec& cluster,
                                         const Workload& workload, EngineTraits engine, const CostParams& params,
                                         bool seqs_given, bool tokens_given) {
  if (f.max_num_seqs && !seqs_given) engine.max_num_seqs = *f.max_num_seqs;
  // a closed-form plan over the engine's cap ran with the cap raised to its batch (launch.md)
  if (!f.max_num_seqs && !seqs_given) engine.max_num_seqs = plan_running_cap(engine, f.plan, workload.mode);
  if (f.max_num_tokens && !tokens_given) engine.max_num_tokens = *f.max_num_tokens;
  if (f.decode_steps && engine.decode_steps <= 1) {  // (a --decode-steps given wins)
    auto e = with_decode_steps(engine, *f.decode_steps);
    if (!e) return Error{file, "engine_settings.decode_steps", e.error().expected, e.error().found};
    engine = *e;
  }
  if (f.adp_balance && engine.adp_timeout_iters <= 0) {  // (an --adp-balance given wins)
    auto e = with_adp_balance(engine, f.adp_balance->first, f.adp_balance->second);
    if (!e) return Error{file, "engine_settings.adp_balance", e.error().expected, e.error().found};
    engine = *e;
  }
  if (f.cuda_graph_batch_sizes && engine.cuda_graph_batch_sizes.empty()) {  // (a --cuda-graph-batch-sizes given wins)
    auto e = with_cuda_graph_batch_sizes(engine, *f.cuda_graph_batch_sizes);
    if (!e) return Error{file, "engine_settings.cuda_graph_batch_sizes", e.error().expected, e.error().found};
    engine = *e;
  }
  PlanDeployment out{make_context(model, cluster, workload, params, engine), {f.plan, f.prefill_pool, {}}};
  if (f.prefill_max_num_seqs && !seqs_given) out.d.prefill_settings.max_num_seqs = *f.prefill_max_num_seqs;
  if (f.prefill_max_num_tokens && !tokens_given) out.d.prefill_settings.max_num_tokens = *f.prefill_max_num_tokens;
  for (const Plan* p : {&out.d.plan, out.d.prefill ? &*out.d.prefill : nullptr}) {
    if (p == nullptr) continue;
    Plan probe = *p;
    if (probe.batch == 0) probe.batch = probe.deg.attn_dp;  // a serve plan's "max"
    if (auto why = validate_plan(probe, model, cluster)) {
      return Error{file, p == &out.d.plan ? "plan" : "disaggregated.prefill", fmt::format("a plan valid on {} and {}", model.name, cluster.name),
                   *why};
    }
  }
  if (out.d.prefill && out.d.prefill->deg.total_gpus() + out.d.plan.deg.total_gpus() > cluster.num_gpus) {
    return Error{file, "disaggregated", fmt::format("pools that fit the cluster's {} GPUs", cluster.num_gpus),
                 fmt::format("{} prefill + {} decode GPUs", out.d.prefill->deg.total_gpus(), out.d.plan.deg.total_gpus())};
  }
  return out;
}

Expected<Workload> workload_of_run(const Workload& base, const MeasuredRun& run, std::int64_t replicas, bool disaggregated,
                                   std::vector<std::string>* notes) {
  if (run.completed <= 0) return Error{run.file, "completed", "at least one completed request to compare with", "0"};
  Workload w = base;
  w.mode = Mode::kServe;
  w.ttft_ms.reset();
  w.tpot_ms.reset();
  w.ttft_pct.clear();
  w.tpot_pct.clear();
  w.batch.reset();
  w.serve.trace.clear();
  w.serve.trace_file.clear();
  w.serve.requests = run.completed;
  // lengths: the tool's own per-request draw where it wrote one, else its means
  const auto lengths = [&](const std::vector<std::int64_t>& lens, const std::optional<double>& mean, std::int64_t plan_len, const char* what)
      -> LengthDist {
    if (!lens.empty()) return histogram_of(lens);
    if (mean && *mean > 0) return fixed_at(*mean);
    notes->push_back(fmt::format("the result gives no {} lengths: the plan's {} tokens are simulated", what, plan_len));
    return fixed_at(static_cast<double>(plan_len));
  };
  w.serve.input = lengths(run.input_lens, run.mean_input, base.isl, "input");
  w.serve.output = lengths(run.output_lens, run.mean_output, base.osl, "output");
  if (run.input_lens.empty() || run.output_lens.empty()) {
    notes->push_back("the result has no per-request lengths (vLLM: --save-detailed, SGLang: --output-details): each request is "
                     "simulated at the mean lengths");
  }
  w.isl = std::clamp<std::int64_t>(std::llround(mean_of(*w.serve.input)), 1, kMaxTokens);
  w.osl = std::clamp<std::int64_t>(std::llround(mean_of(*w.serve.output)), 1, kMaxTokens);
  Arrivals& a = w.serve.arrivals;
  a = Arrivals{};
  if (run.request_rate) {
    a.kind = Arrivals::Kind::kPoisson;
    a.rate = *run.request_rate;
    if (run.max_concurrency && *run.max_concurrency < run.completed) {
      notes->push_back(fmt::format("the benchmark also held at most {} requests in flight; the simulation offers the Poisson arrivals "
                                   "without that cap (compare the measured and simulated concurrency if the cap was reached)",
                                   *run.max_concurrency));
    }
  } else if (run.max_concurrency && *run.max_concurrency < run.completed) {
    a.kind = Arrivals::Kind::kClosed;
    std::int64_t users = *run.max_concurrency;
    if (!disaggregated && users % replicas != 0) {  // (a disaggregated plan's pools route every user themselves)
      const std::int64_t even = std::max<std::int64_t>(replicas, (users + replicas / 2) / replicas * replicas);
      notes->push_back(fmt::format("{} users do not split evenly over the {} replicas: simulated with {}", users, replicas, even));
      users = even;
    }
    a.concurrency = users;
  } else {
    a.kind = Arrivals::Kind::kBurst;
  }
  if (run.completed / replicas < 1) return Error{run.file, "completed", fmt::format("at least one request per replica ({})", replicas),
                                                 std::to_string(run.completed)};
  return w;
}

ToolStats tool_stats(const std::vector<RequestRecord>& recs, double replicas) {
  ToolStats s;
  if (recs.empty()) return s;
  std::vector<double> ttft, tpot, e2e;
  double first = recs.front().arrival_s, last = 0, out = 0, decode_s = 0, decode_tokens = 0;
  for (const RequestRecord& r : recs) {
    first = std::min(first, r.arrival_s);
    last = std::max(last, r.finish_s);
    out += static_cast<double>(r.output);
    ttft.push_back((r.first_token_s - r.arrival_s) * 1e3);
    e2e.push_back((r.finish_s - r.arrival_s) * 1e3);
    if (r.output > 1) {
      tpot.push_back((r.finish_s - r.first_token_s) * 1e3 / static_cast<double>(r.output - 1));
      decode_s += r.finish_s - r.first_token_s;
      decode_tokens += static_cast<double>(r.output - 1);
    }
  }
  s.completed = static_cast<std::int64_t>(std::llround(static_cast<double>(recs.size()) * replicas));
  s.duration_s = std::max(last - first, 1e-12);
  s.request_throughput = static_cast<double>(recs.size()) * replicas / s.duration_s;
  s.output_throughput = out * replicas / s.duration_s;
  s.ttft = latency_stats(ttft);
  s.tpot = latency_stats(tpot);
  s.e2e = latency_stats(e2e);
  s.itl_mean = decode_tokens > 0 ? decode_s * 1e3 / decode_tokens : 0.0;
  return s;
}

std::vector<CheckRow> compare_rows(const ToolStats& p, const MeasuredRun& run) {
  std::vector<CheckRow> rows;
  const auto add = [&](const char* metric, const char* label, double predicted, const std::optional<double>& measured) {
    if (measured && *measured > 0) rows.push_back({metric, label, predicted, *measured});
  };
  add("request_throughput", "throughput (req/s)", p.request_throughput, run.request_throughput);
  add("output_throughput", "output (tok/s)", p.output_throughput, run.output_throughput);
  const auto latency = [&](const char* m, const char* name, const LatencyStats& pl, const MeasuredLatency& ml) {
    const std::string base = m;
    for (const auto& [stat, pv, mv] : {std::tuple{"mean", pl.mean, ml.mean}, {"p50", pl.p50, ml.p50}, {"p90", pl.p90, ml.p90},
                                       {"p95", pl.p95, ml.p95}, {"p99", pl.p99, ml.p99}}) {
      if (mv && *mv > 0) rows.push_back({base + "_" + stat + "_ms", fmt::format("{} {} (ms)", name, stat), pv, *mv});
    }
  };
  latency("ttft", "TTFT", p.ttft, run.ttft);
  latency("tpot", "TPOT", p.tpot, run.tpot);
  // the tools' ITL pools every chunk gap: its mean is the decode time over decode tokens
  // (a token per chunk); its percentiles see single gaps the simulation does not record
  if (run.itl.mean && *run.itl.mean > 0) rows.push_back({"itl_mean_ms", "ITL mean (ms)", p.itl_mean, *run.itl.mean});
  latency("e2e", "E2E", p.e2e, run.e2e);
  return rows;
}

Expected<CheckResult> check_run(const SimContext& ctx, const Deployment& d, const MeasuredRun& run, Watch* watch) {
  CheckResult out;
  out.tool = run.tool;
  out.file = run.file;
  const std::int64_t replicas = d.prefill ? 1 : std::max<std::int32_t>(1, d.plan.deg.replicas);
  auto w = workload_of_run(ctx.workload, run, replicas, d.prefill.has_value(), &out.notes);
  if (!w) return w.error();
  out.workload = *w;
  const SimContext c = make_context(ctx.model, ctx.cluster, *w, ctx.params, ctx.engine);
  ServeOptions opt;
  opt.keep_records = true;
  opt.measure_capacity = false;
  opt.watch = watch;
  ServeResult r;
  if (d.prefill) {
    r = simulate_disaggregated(c, DisaggPlan{*d.prefill, d.plan, d.prefill_settings, {}}, opt).total;
  } else {
    r = simulate_serving(c, d.plan, opt);
  }
  if (r.stopped) {
    out.reason = r.reason;
    return out;
  }
  if (r.records.empty()) {
    out.reason = r.reason.empty() ? "no request was served" : r.reason;
    return out;
  }
  out.simulated = true;
  out.predicted = tool_stats(r.records, static_cast<double>(replicas));
  out.rows = compare_rows(out.predicted, run);
  return out;
}

}  // namespace shardwise
