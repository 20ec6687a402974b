// check/: the benchmark tools' result files (each written to its documented schema, docs/check.md),
// the traffic they replay, the tools' statistics from simulated requests, the calibration
// profile and the fit (a deliberately perturbed step overhead is recovered).
#include "check/check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "check/calibrate.hpp"
#include "check/result.hpp"
#include "cost/calibration.hpp"
#include "cost/engine.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

// vllm bench serve --save-result (vllm/benchmarks/serve.py), without --save-detailed
constexpr const char* kVllm = R"({"date": "20251120-120000", "endpoint_type": "openai", "backend": "vllm", "label": null,
 "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 500,
 "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": null, "duration": 130.2, "completed": 500, "failed": 0,
 "total_input_tokens": 512000, "total_output_tokens": 64000, "request_throughput": 3.84, "request_goodput": null,
 "output_throughput": 491.5, "total_token_throughput": 4423.0, "latencies": [1.0, 2.0], "queue_times": [0.0, 0.0],
 "mean_ttft_ms": 45.1, "median_ttft_ms": 40.0, "std_ttft_ms": 6.2, "p99_ttft_ms": 91.4, "p99.9_ttft_ms": 99.0,
 "mean_tpot_ms": 7.9, "median_tpot_ms": 7.8, "std_tpot_ms": 0.4, "p99_tpot_ms": 9.2,
 "mean_itl_ms": 7.9, "median_itl_ms": 7.7, "std_itl_ms": 1.1, "p99_itl_ms": 14.0})";

// sglang.bench_serving --output-file (python/sglang/benchmark/serving.py): JSONL, one run per
// line, json.dumps writes an infinite rate as a bare Infinity
constexpr const char* kSglang =
    "{\"backend\": \"sglang\", \"dataset_name\": \"random\", \"request_rate\": 2.0, \"completed\": 10, \"mean_ttft_ms\": 1.0}\n"
    R"({"tag": null, "backend": "sglang", "dataset_name": "random", "request_rate": Infinity, "max_concurrency": 64, "sharegpt_output_len": null, "random_input_len": 1024, "random_output_len": 1024, "random_range_ratio": 1.0, "server_info": null, "duration": 120.5, "completed": 1000, "total_input_tokens": 1024000, "total_output_tokens": 1024000, "total_output_tokens_retokenized": 1023500, "request_throughput": 8.3, "input_throughput": 8498.0, "output_throughput": 8498.0, "total_throughput": 16996.0, "mean_e2e_latency_ms": 7600.0, "median_e2e_latency_ms": 7590.0, "std_e2e_latency_ms": 50.0, "p90_e2e_latency_ms": 7700.0, "p95_e2e_latency_ms": 7750.0, "p99_e2e_latency_ms": 7800.0, "mean_ttft_ms": 200.0, "median_ttft_ms": 190.0, "std_ttft_ms": 30.0, "p90_ttft_ms": 250.0, "p95_ttft_ms": 270.0, "p99_ttft_ms": 300.0, "mean_tpot_ms": 7.2, "median_tpot_ms": 7.2, "std_tpot_ms": 0.2, "p90_tpot_ms": 7.5, "p95_tpot_ms": 7.6, "p99_tpot_ms": 7.8, "mean_itl_ms": 7.2, "median_itl_ms": 7.1, "std_itl_ms": 1.0, "p90_itl_ms": 7.9, "p95_itl_ms": 8.3, "p99_itl_ms": 12.0, "concurrency": 63.1, "accept_length": null, "max_output_tokens_per_s": 9000.0, "max_concurrent_requests": 64})"
    "\n";

// aiperf's profile_export_aiperf.json (aiperf/exporters/json_exporter.py): one object per
// metric; inter_token_latency is per request (latency - TTFT) / (OSL - 1)
constexpr const char* kAiperf = R"({
  "request_throughput": {"unit": "requests/sec", "avg": 3.98},
  "request_latency": {"unit": "ms", "avg": 1190.2, "p50": 1185.0, "p90": 1240.0, "p95": 1260.0, "p99": 1300.0, "min": 1090.0, "max": 1350.0, "std": 40.1},
  "request_count": {"unit": "requests", "avg": 1000.0},
  "time_to_first_token": {"unit": "ms", "avg": 35.1, "p50": 33.0, "p90": 45.0, "p99": 61.4},
  "inter_token_latency": {"unit": "ms", "avg": 9.1, "p50": 9.0, "p99": 10.2},
  "output_token_throughput": {"unit": "tokens/sec", "avg": 509.3},
  "output_sequence_length": {"unit": "tokens", "avg": 128.0},
  "input_sequence_length": {"unit": "tokens", "avg": 1024.0},
  "benchmark_duration": {"unit": "sec", "avg": 251.3},
  "input_config": {"endpoint": {"model_names": ["meta-llama/Llama-3.1-8B-Instruct"], "type": "chat", "streaming": true},
                   "loadgen": {"request_rate": 4.0, "request_rate_mode": "poisson", "request_count": 1000}},
  "was_cancelled": false
})";

TEST(MeasuredRun, ReadsVllmSaveResult) {
  auto r = parse_measured_run(kVllm, "v.json");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tool, "vllm");
  EXPECT_EQ(r->completed, 500);
  ASSERT_TRUE(r->request_rate.has_value());
  EXPECT_DOUBLE_EQ(*r->request_rate, 4.0);
  EXPECT_FALSE(r->max_concurrency.has_value());
  EXPECT_DOUBLE_EQ(*r->mean_input, 1024.0);  // 512,000 / 500
  EXPECT_DOUBLE_EQ(*r->mean_output, 128.0);  // 64,000 / 500
  EXPECT_DOUBLE_EQ(*r->ttft.mean, 45.1);
  EXPECT_DOUBLE_EQ(*r->ttft.p50, 40.0);  // median_ttft_ms
  EXPECT_DOUBLE_EQ(*r->ttft.p99, 91.4);  // p99_ttft_ms, not p99.9
  EXPECT_FALSE(r->ttft.p90.has_value());
  EXPECT_DOUBLE_EQ(*r->tpot.mean, 7.9);
  EXPECT_FALSE(r->e2e.mean.has_value());  // no e2el in --percentile-metrics
  EXPECT_TRUE(r->input_lens.empty());
}

TEST(MeasuredRun, ReadsVllmInfiniteRateAndConcurrency) {
  auto r = parse_measured_run(R"({"num_prompts": 64, "request_rate": "inf", "max_concurrency": 16, "completed": 64,
    "input_lens": [100, 200], "output_lens": [10, 30], "mean_ttft_ms": 10})", "v.json");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(r->request_rate.has_value());
  EXPECT_EQ(*r->max_concurrency, 16);
  EXPECT_EQ(r->input_lens, (std::vector<std::int64_t>{100, 200}));
}

TEST(MeasuredRun, ReadsTheLastRunOfSglangJsonlWithInfinity) {
  auto r = parse_measured_run(kSglang, "s.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tool, "sglang");
  EXPECT_EQ(r->completed, 1000);               // the second line, not the first
  EXPECT_FALSE(r->request_rate.has_value());   // Infinity: as fast as possible
  EXPECT_EQ(*r->max_concurrency, 64);
  EXPECT_DOUBLE_EQ(*r->e2e.mean, 7600.0);      // mean_e2e_latency_ms
  EXPECT_DOUBLE_EQ(*r->tpot.p90, 7.5);
  EXPECT_DOUBLE_EQ(*r->mean_output, 1024.0);
}

TEST(MeasuredRun, ReadsAiperfExport) {
  auto r = parse_measured_run(kAiperf, "profile_export_aiperf.json");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tool, "aiperf");
  EXPECT_EQ(r->completed, 1000);
  EXPECT_DOUBLE_EQ(*r->request_rate, 4.0);
  EXPECT_DOUBLE_EQ(*r->tpot.mean, 9.1);  // inter_token_latency is per-request TPOT
  EXPECT_DOUBLE_EQ(*r->ttft.p90, 45.0);
  EXPECT_DOUBLE_EQ(*r->e2e.p99, 1300.0);
  EXPECT_DOUBLE_EQ(*r->duration_s, 251.3);
  EXPECT_DOUBLE_EQ(*r->mean_input, 1024.0);
  EXPECT_DOUBLE_EQ(*r->output_throughput, 509.3);
}

TEST(MeasuredRun, GenaiPerfAndTimeUnits) {
  // genai-perf: flat input_config; a latency in ns is read in ms
  auto r = parse_measured_run(R"({"time_to_first_token": {"unit": "ns", "avg": 2000000}, "request_count": {"unit": "count", "avg": 10},
    "input_config": {"request_rate": 2.5, "concurrency": null}})", "g.json");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tool, "genai-perf");
  EXPECT_DOUBLE_EQ(*r->ttft.mean, 2.0);
  EXPECT_DOUBLE_EQ(*r->request_rate, 2.5);
}

TEST(MeasuredRun, BadInputNamesTheFileFieldAndValue) {
  const auto msg = [](const char* text) {
    auto r = parse_measured_run(text, "r.json");
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.error().message();
  };
  {
    const std::string m = msg(R"({"mean_ttft_ms": "fast", "completed": 3})");
    EXPECT_NE(m.find("r.json"), std::string::npos);
    EXPECT_NE(m.find("mean_ttft_ms"), std::string::npos);
    EXPECT_NE(m.find("fast"), std::string::npos);
  }
  EXPECT_NE(msg(R"({"mean_ttft_ms": 3})").find("completed"), std::string::npos);
  EXPECT_NE(msg(R"({"mean_ttft_ms": 3, "completed": 0})").find("at least one completed request"), std::string::npos);
  EXPECT_NE(msg(R"({"mean_ttft_ms": -3, "completed": 3})").find("at least 0"), std::string::npos);
  EXPECT_NE(msg(R"({"hello": 1})").find("none of their keys"), std::string::npos);
  EXPECT_NE(msg(R"({"time_to_first_token": {"unit": "fortnights", "avg": 1}})").find("fortnights"), std::string::npos);
  EXPECT_NE(msg(R"({"time_to_first_token": {"unit": "ms", "avg": 1}, "input_config": {"loadgen": {"request_rate": 2,
    "request_rate_mode": "constant", "request_count": 5}}})").find("request_rate_mode"), std::string::npos);
  EXPECT_NE(msg("[1, 2]").find("JSON object"), std::string::npos);
  EXPECT_FALSE(parse_measured_run("{", "r.json").ok());
}

Workload serve_workload() {
  Workload w;
  w.name = "t";
  w.mode = Mode::kServe;
  w.isl = 512;
  w.osl = 128;
  return w;
}

TEST(CheckWorkload, ReplaysTheBenchmarksTraffic) {
  MeasuredRun run;
  run.file = "r.json";
  run.completed = 100;
  run.mean_input = 300.4;
  run.mean_output = 99.6;
  std::vector<std::string> notes;
  // no rate, no cap: all at once, fixed at the rounded means
  auto w = workload_of_run(serve_workload(), run, 1, false, &notes);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->serve.arrivals.kind, Arrivals::Kind::kBurst);
  EXPECT_EQ(w->serve.requests, 100);
  EXPECT_EQ(w->isl, 300);
  EXPECT_EQ(w->osl, 100);
  // inf rate with a cap below the requests: a closed loop of that many users, evened over replicas
  run.max_concurrency = 7;
  w = workload_of_run(serve_workload(), run, 2, false, &notes);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->serve.arrivals.kind, Arrivals::Kind::kClosed);
  EXPECT_EQ(w->serve.arrivals.concurrency, 8);  // round(7 / 2) x 2
  // a disaggregated plan's pools route every user: 7 users as measured
  w = workload_of_run(serve_workload(), run, 2, true, &notes);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->serve.arrivals.kind, Arrivals::Kind::kClosed);
  EXPECT_EQ(w->serve.arrivals.concurrency, 7);
  // a rate: Poisson; per-request lengths: their histogram
  run.request_rate = 2.5;
  run.input_lens = {100, 100, 300};
  run.output_lens = {10, 20, 30};
  w = workload_of_run(serve_workload(), run, 1, false, &notes);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->serve.arrivals.kind, Arrivals::Kind::kPoisson);
  EXPECT_DOUBLE_EQ(w->serve.arrivals.rate, 2.5);
  ASSERT_EQ(w->serve.input->bins.size(), 2U);  // {100: 2, 300: 1}
  EXPECT_NEAR(mean_of(*w->serve.input), (100 + 100 + 300) / 3.0, 1e-9);
  run.completed = 0;
  EXPECT_FALSE(workload_of_run(serve_workload(), run, 1, false, &notes).ok());
}

TEST(CheckStats, TheToolsDefinitionsByHand) {
  // two requests: arrive 0 and 1 s; first tokens at 0.1 and 1.3; finish at 1.1 (11 tokens) and 2.3 (1 token)
  std::vector<RequestRecord> recs(2);
  recs[0] = {0.0, 0.0, 0.1, 1.1, 100, 11, 0};
  recs[1] = {1.0, 1.0, 1.3, 2.3, 100, 1, 0};
  const ToolStats s = tool_stats(recs, 2.0);  // two replicas
  EXPECT_EQ(s.completed, 4);
  EXPECT_DOUBLE_EQ(s.duration_s, 2.3);                     // first arrival to last completion
  EXPECT_NEAR(s.request_throughput, 4 / 2.3, 1e-12);       // 2 x 2 requests
  EXPECT_NEAR(s.output_throughput, 2 * 12 / 2.3, 1e-12);   // 2 x (11 + 1) tokens
  EXPECT_NEAR(s.ttft.mean, 200.0, 1e-9);                   // (100 + 300) / 2 ms
  EXPECT_NEAR(s.tpot.mean, 100.0, 1e-9);                   // only the first: 1,000 ms / 10
  EXPECT_NEAR(s.e2e.mean, 1200.0, 1e-9);                   // (1,100 + 1,300) / 2
  EXPECT_NEAR(s.itl_mean, 100.0, 1e-9);
}

SimContext vllm_ctx(const Workload& w) {
  SimContext c = test_support::ctx_for("llama-3.1-8b", "h100x1", w);
  auto e = load_engine_profile("vllm");
  EXPECT_TRUE(e.ok());
  c.engine = *e;
  return c;
}

// A vLLM --save-result file (with --percentile-metrics ttft,tpot,itl,e2el
// --metric-percentiles 50,99) of what `ctx` predicts for `d` at `rate`.
std::string vllm_result_of(const SimContext& ctx, const Deployment& d, double rate, std::int64_t n) {
  MeasuredRun run;
  run.file = "synthetic";
  run.request_rate = rate;
  run.completed = n;
  run.mean_input = static_cast<double>(ctx.workload.isl);
  run.mean_output = static_cast<double>(ctx.workload.osl);
  run.ttft.mean = 1.0;  // something to compare with
  auto r = check_run(ctx, d, run);
  EXPECT_TRUE(r.ok() && r->simulated);
  const ToolStats& s = r->predicted;
  return fmt::format(
      R"({{"num_prompts": {0}, "request_rate": {1}, "burstiness": 1.0, "max_concurrency": null, "duration": {2}, "completed": {0},)"
      R"( "total_input_tokens": {3}, "total_output_tokens": {4}, "request_throughput": {5}, "output_throughput": {6},)"
      R"( "mean_ttft_ms": {7}, "median_ttft_ms": {8}, "p99_ttft_ms": {9}, "mean_tpot_ms": {10}, "median_tpot_ms": {11},)"
      R"( "p99_tpot_ms": {12}, "mean_itl_ms": {13}, "mean_e2el_ms": {14}, "median_e2el_ms": {15}, "p99_e2el_ms": {16}}})",
      n, rate, s.duration_s, ctx.workload.isl * n, ctx.workload.osl * n, s.request_throughput, s.output_throughput, s.ttft.mean,
      s.ttft.p50, s.ttft.p99, s.tpot.mean, s.tpot.p50, s.tpot.p99, s.itl_mean, s.e2e.mean, s.e2e.p50, s.e2e.p99);
}

TEST(Check, APredictionCheckedAgainstItselfHasNoError) {
  Workload w = serve_workload();
  const SimContext ctx = vllm_ctx(w);
  const Deployment d{test_support::plan(1, 0), std::nullopt, {}};
  auto run = parse_measured_run(vllm_result_of(ctx, d, 3.0, 300), "self.json");
  ASSERT_TRUE(run.ok()) << run.error().message();
  auto r = check_run(ctx, d, *run);
  ASSERT_TRUE(r.ok() && r->simulated);
  ASSERT_GE(r->rows.size(), 12U);
  for (const auto& row : r->rows) EXPECT_NEAR(row.error(), 0.0, 1e-6) << row.metric;
  const std::string text = check_text(ctx, d, *r, {"a warning"});
  EXPECT_NE(text.find("TTFT p99 (ms)"), std::string::npos);
  EXPECT_NE(text.find("warning      a warning"), std::string::npos);
  EXPECT_NE(check_json(ctx, d, *r, {}).find("\"ttft_p99_ms\""), std::string::npos);
}

TEST(Calibrate, RecoversAPerturbedStepOverheadFromTwoResults) {
  // the truth: the GPU's step overhead doubled; the results: two Poisson rates (different
  // batch sizes) simulated with it, written as vLLM result files
  Workload w = serve_workload();
  SimContext truth = vllm_ctx(w);
  const double base = truth.params.step_overhead_us;
  ASSERT_GT(base, 100.0);
  truth.params.step_overhead_us = 2.0 * base;
  const Deployment d{test_support::plan(1, 0), std::nullopt, {}};
  std::vector<MeasuredRun> runs;
  for (const double rate : {3.0, 10.0}) {
    auto run = parse_measured_run(vllm_result_of(truth, d, rate, 400), fmt::format("rate{}.json", rate));
    ASSERT_TRUE(run.ok()) << run.error().message();
    runs.push_back(*run);
  }
  const SimContext start = vllm_ctx(w);  // the model as built
  auto r = calibrate(start, d, runs);
  ASSERT_TRUE(r.ok()) << r.error().message();
  std::printf("step overhead: truth %.1f us, started at %.1f, fitted %.1f (%+.2f%%); RMS log error %.4f -> %.4f in %d evaluations\n",
              2.0 * base, base, r->profile.step_overhead_us, (r->profile.step_overhead_us / (2.0 * base) - 1.0) * 100.0, r->rms_before,
              r->rms_after, r->evaluations);
  EXPECT_NEAR(r->profile.step_overhead_us, 2.0 * base, 0.10 * 2.0 * base);
  EXPECT_LT(r->rms_after, 0.25 * r->rms_before);
  EXPECT_GT(r->rms_before, 0.05);
  // what moved is reported: the step overhead, and the experts left alone (a dense model)
  EXPECT_EQ(r->terms.front().term, "step_overhead_us");
  EXPECT_TRUE(r->terms.front().fitted);
  for (const auto& t : r->terms) {
    if (t.term == "experts") {
      EXPECT_FALSE(t.fitted);
    }
  }
  const std::string text = calibrate_text(*r);
  std::printf("%s%s", text.c_str(), calibration_profile_yaml(r->profile).c_str());  // the figures docs/calibration.md quotes
  EXPECT_NE(text.find("step overhead (us)"), std::string::npos);
  // the profile round-trips and applies
  auto back = parse_calibration_profile(calibration_profile_yaml(r->profile), "p.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_NEAR(back->step_overhead_us, r->profile.step_overhead_us, 1e-3);
  EXPECT_EQ(back->points.size(), 2U);
  EXPECT_EQ(back->model, "llama-3.1-8b");
  auto applied = apply_calibration(start.params, *back, "h100", "--calibration");
  ASSERT_TRUE(applied.ok());
  EXPECT_NEAR(applied->step_overhead_us, r->profile.step_overhead_us, 1e-3);
  EXPECT_FALSE(apply_calibration(start.params, *back, "h200", "--calibration").ok());  // measured on another GPU
}

TEST(CalibrationProfile, WarnsOutsideWhatItMeasured) {
  CalibrationProfile c;
  c.gpu = "h100";
  c.engine = "vllm";
  c.model = "llama-3.1-8b";
  c.points = {{"a", 2.0, 0, 100, 500, 100}, {"b", 4.0, 0, 100, 600, 120}};
  Workload w = serve_workload();  // 512 in, 128 out: inside (600 x 1.25 > 512 > 500 / 1.25)
  w.serve.arrivals = {Arrivals::Kind::kPoisson, 3.0, 0};
  SimContext ctx = vllm_ctx(w);
  EXPECT_TRUE(calibration_warnings(c, ctx, test_support::plan(1, 0)).empty());
  const auto warnings = calibration_warnings(c, ctx, test_support::plan(2, 0));
  ASSERT_EQ(warnings.size(), 1U);  // another instance layout
  EXPECT_NE(warnings[0].find("tp 2"), std::string::npos);
  ctx.workload.serve.arrivals.rate = 20.0;  // 20 > 4 x 1.25
  ctx.workload.isl = 4000;
  EXPECT_EQ(calibration_warnings(c, ctx, test_support::plan(1, 0)).size(), 2U);
  ctx.engine.name = "sglang";
  EXPECT_EQ(calibration_warnings(c, ctx, test_support::plan(1, 0)).size(), 3U);
}

TEST(CalibrationProfile, BadInputNamesTheField) {
  const auto msg = [](const std::string& text) {
    auto r = parse_calibration_profile(text, "p.yaml");
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.error().message();
  };
  const std::string ok = "schema: shardwise-calibration/1\ngpu: h100\nstep_overhead_us: 10\n";
  EXPECT_TRUE(parse_calibration_profile(ok, "p.yaml").ok());
  EXPECT_NE(msg("schema: other/1\ngpu: h100\nstep_overhead_us: 10\n").find("schema"), std::string::npos);
  EXPECT_NE(msg(ok + "scales: {gemm: 0}\n").find("scales.gemm"), std::string::npos);
  EXPECT_NE(msg(ok + "scales: {gemmm: 1}\n").find("gemmm"), std::string::npos);
  EXPECT_NE(msg("schema: shardwise-calibration/1\ngpu: h100\nstep_overhead_us: -1\n").find("step_overhead_us"), std::string::npos);
  EXPECT_NE(msg(ok + "results: 3\n").find("results"), std::string::npos);
}

TEST(CalibrationProfile, WhatIsWrittenReadsBack) {
  // fuzz_result findings: a profile without the optional names wrote them as "" (which the
  // reader refuses), and a name that is not UTF-8 threw while writing
  auto c = parse_calibration_profile("schema: shardwise-calibration/1\ngpu: h100\nstep_overhead_us: 10\nresults: [{rate: 2}]\n", "p.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  auto back = parse_calibration_profile(calibration_profile_yaml(*c), "again.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->engine, "");
  EXPECT_EQ(back->points.size(), 1U);
  c->model = "model-\xff\xfe";
  back = parse_calibration_profile(calibration_profile_yaml(*c), "again.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->model, "model-\xef\xbf\xbd\xef\xbf\xbd");  // each invalid byte as U+FFFD
}

TEST(TimeScales, MultiplyEachOpKindAndNothingElse) {
  const Workload w = test_support::decode(2048);
  const SimContext ctx = test_support::ctx_for("llama-3.1-8b", "h100x8", w);
  const Plan p = test_support::plan(2, 32);
  const Breakdown b0 = breakdown_step(ctx, p, Phase::kDecode, 32, 2048);
  SimContext scaled = ctx;
  scaled.params.scales.gemm = 2.0;
  scaled.params.scales.comm = 3.0;
  const Breakdown b1 = breakdown_step(scaled, p, Phase::kDecode, 32, 2048);
  ASSERT_EQ(b0.ops.size(), b1.ops.size());
  bool any_gemm = false, any_comm = false;
  for (std::size_t i = 0; i < b0.ops.size(); ++i) {
    const std::string& op = b0.ops[i].op;
    const bool gemm = op == "qkv_proj" || op == "o_proj" || op == "ffn1" || op == "ffn2" || op == "lm_head";
    if (gemm && b0.ops[i].compute_s > 0) {
      any_gemm = true;
      EXPECT_NEAR(b1.ops[i].compute_s, 2.0 * b0.ops[i].compute_s, 1e-15) << op;  // a dense GEMM: twice
    } else if (op == "attention") {
      EXPECT_DOUBLE_EQ(b1.ops[i].compute_s, b0.ops[i].compute_s);  // attention: its own scale, 1
    }
    if (b0.ops[i].comm_s > 0) {
      any_comm = true;
      EXPECT_NEAR(b1.ops[i].comm_s, 3.0 * b0.ops[i].comm_s, 1e-15) << op;  // tp 2: the all-reduces, three times
    }
  }
  EXPECT_TRUE(any_gemm && any_comm);
  // a scale above 1 is never faster
  SimContext slower = ctx;
  slower.params.scales.attention = 1.5;
  EXPECT_GT(evaluate(slower, p).step_s, evaluate(ctx, p).step_s);
}

}  // namespace
}  // namespace shardwise
