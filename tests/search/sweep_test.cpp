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

}  // namespace
}  // namespace shardwise
