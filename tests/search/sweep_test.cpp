// shardwise sweep (search/sweep.hpp): a point's price by hand, the fewest-GPUs mark, errors
// that name the flag, the price table.
#include "search/sweep.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "model/loader.hpp"
#include "report/sweep_report.hpp"

namespace shardwise {
namespace {

Workload chat() {
  auto w = load_workload("chat-1k-1k");
  EXPECT_TRUE(w.ok());
  return *w;
}

// chat-1k-1k served under percentile SLOs: p99 TTFT 2 s, p90 TPOT 50 ms
Expected<Workload> serve_chat() {
  WorkloadOverrides ov;
  ov.mode = "serve";
  ov.slo = "ttft:p99<=2000,tpot:p90<=50";
  return apply_overrides(chat(), ov);
}

TEST(Sweep, PricesAndTheFewestGpus) {
  auto m = load_model("llama-3.1-70b");
  ASSERT_TRUE(m.ok());
  SweepOptions o;
  o.gpus = {"a100", "h100"};
  o.counts = {2, 4};
  const PriceTable prices{{"a100", 1.8}, {"h100", 3.0}};
  auto pts = run_sweep(*m, chat(), o, prices);
  ASSERT_TRUE(pts.ok()) << pts.error().message();
  ASSERT_EQ(pts->size(), 4u);
  // bf16 70B (141 GB of weights) does not fit 2 A100 (80 GB); 4 do
  const SweepPoint& a2 = (*pts)[0];
  const SweepPoint& a4 = (*pts)[1];
  EXPECT_FALSE(a2.found);
  EXPECT_FALSE(a2.reason.empty());
  ASSERT_TRUE(a4.found);
  EXPECT_TRUE(a4.fewest);
  // $/M tokens = $/GPU-hour / (tokens/s per GPU x 3600 s) x 1e6
  EXPECT_DOUBLE_EQ(a4.usd_per_mtok, 1.8 / (a4.metrics.output_tok_s_per_gpu * 3600.0) * 1e6);
  const SweepPoint& h2 = (*pts)[2];
  const SweepPoint& h4 = (*pts)[3];
  ASSERT_TRUE(h2.found && h4.found);
  EXPECT_TRUE(h2.fewest);
  EXPECT_FALSE(h4.fewest);
  // the CSV: a header and one line per point
  const std::string csv = sweep_csv(*pts);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_EQ(csv.rfind("gpu,gpus,dtype,engine,found", 0), 0u);
  // no price, no $ figure
  auto unpriced = run_sweep(*m, chat(), SweepOptions{{"h100"}, {8}, {""}, {""}, "exact", {}, nullptr, 0, 1, false, nullptr, std::nullopt}, PriceTable{});
  ASSERT_TRUE(unpriced.ok());
  EXPECT_EQ((*unpriced)[0].usd_per_mtok, 0.0);
}

TEST(Sweep, ErrorsNameTheFlag) {
  auto m = load_model("llama-3.1-8b");
  ASSERT_TRUE(m.ok());
  SweepOptions o;
  o.gpus = {"h100", "tpu"};
  o.counts = {8};
  auto e = run_sweep(*m, chat(), o, {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().file, "--gpus");
  o.gpus = {"h100"};
  o.counts = {0};
  EXPECT_EQ(run_sweep(*m, chat(), o, {}).error().file, "--counts");
  o.counts = {8};
  o.engines = {"tgi"};
  EXPECT_EQ(run_sweep(*m, chat(), o, {}).error().file, "--engines");
  o.engines = {""};
  o.dtypes = {"fp7"};
  EXPECT_EQ(run_sweep(*m, chat(), o, {}).error().file, "--dtypes");
}

TEST(Sweep, TheShippedPricesAndABadFile) {
  auto p = load_prices("");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_GT(p->at("h100"), 0.0);
  auto bad = load_prices(std::string(SHARDWISE_TEST_DATA) + "/bad/r01-prices-unknown-gpu.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("usd_per_gpu_hour.tpu"), std::string::npos) << bad.error().message();
}

TEST(Sweep, APointTravelsExactlyAndANonFiniteFigureAsZero) {
  SweepPoint p;
  p.gpu = "h100";
  p.count = 8;
  p.found = true;
  p.plan.deg = Degrees{4, 1, 1, 2, 1};
  p.metrics.objective = 1234.5678901234567;
  p.metrics.output_tok_s_per_gpu = 1234.5678901234567;
  p.metrics.tpot_s = 0.049876543210987654;
  p.metrics.memory.weights = Bytes(7.5e10);
  p.usd_per_mtok = 0.6751234567890123;
  const SweepPoint q = sweep_point_from_json(sweep_point_to_json(p));
  EXPECT_EQ(q.metrics.objective, p.metrics.objective);
  EXPECT_EQ(q.metrics.tpot_s, p.metrics.tpot_s);
  EXPECT_EQ(q.usd_per_mtok, p.usd_per_mtok);
  EXPECT_EQ(q.plan.deg, p.plan.deg);
  EXPECT_EQ(q.metrics.memory.total().value(), 7.5e10);
  p.usd_per_mtok = std::numeric_limits<double>::infinity();
  EXPECT_EQ(sweep_point_from_json(sweep_point_to_json(p)).usd_per_mtok, 0.0);
}

// A serving sweep: each point planned as plan --mode serve; prices per million output tokens
// and per thousand requests by hand; TensorRT-LLM skipped on an AMD GPU with the reason.
TEST(Sweep, ServingPointsArePlannedUnderLoadAndPricedAtTheirRate) {
  auto m = load_model("llama-3.1-8b");
  ASSERT_TRUE(m.ok());
  auto w = serve_chat();
  ASSERT_TRUE(w.ok()) << w.error().message();
  SweepOptions o;
  o.gpus = {"h100", "mi300x"};
  o.counts = {1, 2};
  o.engines = {"trtllm"};
  o.serve_top_k = 3;
  o.serve_requests = 300;
  const PriceTable prices{{"h100", 3.0}};
  auto pts = run_sweep(*m, *w, o, prices);
  ASSERT_TRUE(pts.ok()) << pts.error().message();
  ASSERT_EQ(pts->size(), 4u);
  for (int i : {0, 1}) {
    const SweepPoint& p = (*pts)[static_cast<std::size_t>(i)];
    ASSERT_TRUE(p.found) << p.reason;
    ASSERT_TRUE(p.serving.has_value());
    const SweepServing& v = *p.serving;
    EXPECT_GT(v.rate, 0.0);
    EXPECT_GE(v.gpus, 1);
    EXPECT_LE(v.gpus, p.count);
    // the statistics reported are the SLOs': p99 TTFT, p90 TPOT, within their bounds
    EXPECT_EQ(v.ttft_pct, 99.0);
    EXPECT_EQ(v.tpot_pct, 90.0);
    EXPECT_LE(v.ttft_ms, 2000.0);
    EXPECT_LE(v.tpot_ms, 50.0);
    // $/M tok = 3.0 / (output tok/s per GPU x 3600) x 1e6; $/k req = 3.0 x GPUs / (req/s x 3600) x 1e3
    EXPECT_DOUBLE_EQ(p.usd_per_mtok, 3.0 / (v.output_tok_s_per_gpu * 3600.0) * 1e6);
    EXPECT_DOUBLE_EQ(v.usd_per_kreq, 3.0 * static_cast<double>(v.gpus) / (v.rate * 3600.0) * 1e3);
  }
  EXPECT_TRUE((*pts)[0].fewest);
  EXPECT_FALSE((*pts)[1].fewest);
  // two GPUs serve more than one
  EXPECT_GT((*pts)[1].serving->rate, (*pts)[0].serving->rate);
  for (int i : {2, 3}) {
    const SweepPoint& p = (*pts)[static_cast<std::size_t>(i)];
    EXPECT_FALSE(p.found);
    EXPECT_EQ(p.skipped, "trtllm is built for NVIDIA GPUs only (for AMD GPUs: vllm, sglang)");
  }
  // the text: the skip said once for both counts; the JSON: the serving object, the skip
  const SweepHeader h{"llama-3.1-8b", "chat-1k-1k", *w, 0, prices};
  const std::string text = sweep_text(h, *pts);
  EXPECT_NE(text.find("skipped      trtllm on mi300x (1, 2 GPUs): trtllm is built for NVIDIA GPUs only"), std::string::npos) << text;
  EXPECT_NE(text.find("TTFT p99"), std::string::npos) << text;
  EXPECT_NE(text.find("TPOT p90"), std::string::npos) << text;
  const std::string json = sweep_json(h, *pts);
  EXPECT_NE(json.find("\"requests_per_s\""), std::string::npos);
  EXPECT_NE(json.find("\"skipped\""), std::string::npos);
  // a serving point travels (the gather of a sweep over MPI ranks) with every printed figure
  const SweepPoint q = sweep_point_from_json(sweep_point_to_json((*pts)[1]));
  ASSERT_TRUE(q.serving.has_value());
  EXPECT_EQ(q.serving->rate, (*pts)[1].serving->rate);
  EXPECT_EQ(q.serving->gpus, (*pts)[1].serving->gpus);
  EXPECT_EQ(q.serving->usd_per_kreq, (*pts)[1].serving->usd_per_kreq);
  EXPECT_EQ(q.serving->prefill.deg, (*pts)[1].serving->prefill.deg);
  EXPECT_EQ(sweep_text(h, std::vector<SweepPoint>{q}), sweep_text(h, std::vector<SweepPoint>{(*pts)[1]}));
}

// With a target rate the point is the fewest of its GPUs that serve it, and the star goes to
// the fewest GPUs used (not the smallest cluster).
TEST(Sweep, ATargetRateSizesTheFewestGpusOfEachPoint) {
  auto m = load_model("llama-3.1-8b");
  ASSERT_TRUE(m.ok());
  auto w = serve_chat();
  ASSERT_TRUE(w.ok());
  SweepOptions o;
  o.gpus = {"h100"};
  o.counts = {2, 4};
  o.serve_top_k = 3;
  o.serve_requests = 300;
  o.disaggregated = false;
  auto one = run_sweep(*m, *w, SweepOptions{o}, PriceTable{});
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE((*one)[0].found);
  // a target one GPU's instance cannot serve, two can: both clusters answer with 2 GPUs
  const double single = (*one)[0].serving->rate / static_cast<double>((*one)[0].serving->gpus);
  o.target_rate = 1.5 * single;
  auto pts = run_sweep(*m, *w, o, PriceTable{});
  ASSERT_TRUE(pts.ok());
  for (const SweepPoint& p : *pts) {
    ASSERT_TRUE(p.found) << p.reason;
    EXPECT_EQ(p.serving->rate, o.target_rate);
    EXPECT_EQ(p.serving->gpus, 2) << p.count;
  }
  EXPECT_TRUE((*pts)[0].fewest);
  EXPECT_FALSE((*pts)[1].fewest);  // the same 2 GPUs, on a larger cluster
}

TEST(Sweep, InputsASweepCannotTakeAreRefusedNamingTheFlag) {
  const Workload c = chat();  // closed form (decode/offline): no requests, no target
  WorkloadOverrides o;
  o.requests = 100;
  auto e = sweep_input_error(c, o, "chat-1k-1k", 0, 24);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file, "--requests");
  e = sweep_input_error(c, {}, "chat-1k-1k", 5, 24);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file, "--target-rate");
  e = sweep_input_error(c, {}, "chat-1k-1k", -1, 24);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file, "--target-rate");
  e = sweep_input_error(c, {}, "chat-1k-1k", 0, 1001);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file, "--top-k");
  // a serving workload: the rate is searched, so a rate from the flags is refused
  WorkloadOverrides s;
  s.mode = "serve";
  auto w = apply_overrides(c, s);
  ASSERT_TRUE(w.ok());
  WorkloadOverrides r;
  r.rate = "5";
  e = sweep_input_error(*w, r, "chat-1k-1k", 0, 24);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file, "--rate");
  EXPECT_FALSE(sweep_input_error(*w, {}, "chat-1k-1k", 5, 24));
}

}  // namespace
}  // namespace shardwise
