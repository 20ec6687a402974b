// The HTML report's pieces: SVG helpers with hand-computed ticks, the frontier,
// and the whole report (every chart, nothing fetched, times that add up).
#include "report/html_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/loader.hpp"
#include "support/search_case.hpp"
#include "report/svg.hpp"

namespace shardwise {
namespace {

TEST(Svg, EscapesMarkup) { EXPECT_EQ(svg::escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"); }

TEST(Svg, NiceTicksCoverTheData) {
  // range 913 in ~6 steps: raw step 152.2, magnitude 100; 1x100 < 152.2 <= 2x100 -> step 200;
  // from floor(0/200) = 0 to ceil(913/200) = 5 -> 0, 200, ..., 1000 (the last tick covers 913)
  EXPECT_EQ(svg::nice_ticks(0, 913, 6), (std::vector<double>{0, 200, 400, 600, 800, 1000}));
  // 3..47 in ~5 steps: raw 8.8, magnitude 1; 5 < 8.8 <= 10 -> step 10; floor(0.3) = 0 .. ceil(4.7) = 5
  EXPECT_EQ(svg::nice_ticks(3, 47, 5), (std::vector<double>{0, 10, 20, 30, 40, 50}));
  // 0..1 in ~4: raw 0.25, magnitude 0.1; 2x0.1 < 0.25 <= 2.5x0.1 -> step 0.25
  const auto t = svg::nice_ticks(0, 1, 4);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_DOUBLE_EQ(t[1], 0.25);
  EXPECT_DOUBLE_EQ(t.back(), 1.0);
}

TEST(Svg, LogTicks) {
  // two decades or fewer: 1, 2, 5 per decade
  EXPECT_EQ(svg::log_ticks(10, 1000), (std::vector<double>{10, 20, 50, 100, 200, 500, 1000}));
  // more: decades only
  EXPECT_EQ(svg::log_ticks(1, 1e5), (std::vector<double>{1, 10, 100, 1000, 1e4, 1e5}));
}

TEST(Svg, TickLabels) {
  EXPECT_EQ(svg::tick_label(0), "0");
  EXPECT_EQ(svg::tick_label(40), "40");
  EXPECT_EQ(svg::tick_label(0.25), "0.25");
  EXPECT_EQ(svg::tick_label(1500), "1500");
  EXPECT_EQ(svg::tick_label(15000), "15k");
  EXPECT_EQ(svg::tick_label(2.5e6), "2.5M");
}

TEST(Svg, EmptyChartSaysSo) {
  svg::XyChart c;
  c.id = "x";
  c.x_label = "calls";
  c.y_label = "tok/s";
  c.empty_note = "nothing to draw";
  const std::string s = svg::xy_chart(c);
  EXPECT_NE(s.find("nothing to draw"), std::string::npos);
  EXPECT_NE(s.find("data-chart=\"x\""), std::string::npos);
}

EvalPoint pt(double ms, double tput) {
  EvalPoint p;
  p.latency_s = ms * 1e-3;
  p.throughput = tput;
  return p;
}

TEST(Frontier, KeepsOnlyUndominatedPoints) {
  // (20 ms, 90) is beaten by (20 ms, 150); (30 ms, 150) is slower than (20 ms, 150) for the same throughput
  const auto f = pareto_frontier({pt(10, 100), pt(20, 90), pt(20, 150), pt(30, 150), pt(5, 50)});
  ASSERT_EQ(f.size(), 3u);
  EXPECT_DOUBLE_EQ(f[0].throughput, 50);
  EXPECT_DOUBLE_EQ(f[1].throughput, 100);
  EXPECT_DOUBLE_EQ(f[2].throughput, 150);
  EXPECT_DOUBLE_EQ(f[2].latency_s, 0.020);
  EXPECT_TRUE(pareto_frontier({}).empty());
}

struct Made {
  SimContext ctx;
  PlanFile file;
  PlanOutcome o;
};

Made make_report_case(const std::string& model, const std::string& cluster, const std::string& workload) {
  test_support::SearchCase sc = test_support::make_search_case(model, cluster, workload);
  Made r{std::move(sc.ctx), {}, {}};
  const SearchSpace& space = sc.space;
  SearchOptions opt;
  opt.budget = 500;
  opt.record_points = true;
  opt.full_history = true;
  r.o.search = search_annealing(r.ctx, space, opt);
  r.o.compared.push_back(search_random_walk(r.ctx, space, opt));
  r.o.baseline = search_megatron(r.ctx, space, opt);
  r.o.metrics = evaluate(r.ctx, r.o.search.best, &r.o.breakdown);
  r.o.baseline_metrics = evaluate(r.ctx, r.o.baseline.best, &r.o.baseline_breakdown);
  r.file = {r.o.search.best, model, cluster, workload, {}, std::nullopt};
  return r;
}

TEST(HtmlReport, EveryChartAndNothingFetched) {
  const Made r = make_report_case("llama-3.1-8b", "h100x8", "decode-16k");
  ASSERT_TRUE(r.o.search.found);
  EXPECT_FALSE(r.o.search.points.empty());    // recorded for the frontier
  EXPECT_FALSE(r.o.baseline.points.empty());
  const std::string html = plan_html(r.ctx, r.file, r.o);
  for (const char* id : {"time-chosen", "time-megatron", "memory", "convergence", "frontier"}) {
    EXPECT_NE(html.find(std::string("data-chart=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(html.find("TPOT SLO"), std::string::npos);  // decode-16k has a TPOT SLO, drawn on the frontier
  EXPECT_NE(html.find(">rw</td>"), std::string::npos);  // the compared engine's row
}

TEST(HtmlReport, RecordedPointsAreTheMemoryFeasibleCalls) {
  const Made r = make_report_case("llama-3.1-8b", "h100x8", "decode-16k");
  // every recorded point fits memory and has a latency; meets_slo matches the objective
  std::int64_t feasible = 0;
  for (const auto& h : r.o.search.history) feasible += h.value > 0 ? 1 : 0;
  std::int64_t meets = 0;
  for (const auto& p : r.o.search.points) {
    EXPECT_GT(p.latency_s, 0);
    EXPECT_GT(p.throughput, 0);
    meets += p.meets_slo ? 1 : 0;
  }
  EXPECT_EQ(meets, feasible);
  EXPECT_GE(static_cast<std::int64_t>(r.o.search.points.size()), feasible);
}

TEST(HtmlReport, TimeBarsAddUpToTheStep) {
  // one stage (pp 1): the per-op bars (time per layer x layers) plus the engine overhead are the stage time
  for (const char* model : {"llama-3.1-70b", "deepseek-v3"}) {
    auto m = load_model(model);
    auto c = cluster_from_preset("h100x16");
    auto w = load_workload("decode-16k");
    ASSERT_TRUE(m.ok() && c.ok() && w.ok());
    const SimContext ctx = make_context(*m, *c, *w, cost_params_for("h100"));
    Plan p;
    p.deg.tp = 8;
    p.deg.attn_dp = 2;
    p.deg.ep = ctx.model.is_moe() ? 16 : 1;
    p.batch = 32;
    Breakdown bd;
    evaluate(ctx, p, &bd);
    double sum = ctx.params.step_overhead_us * 1e-6;
    for (const auto& op : bd.ops) sum += (op.compute_s + op.comm_s) * static_cast<double>(op.layers);
    EXPECT_NEAR(sum, bd.stage_s + ctx.params.step_overhead_us * 1e-6, 1e-9 * sum) << model;
  }
}

}  // namespace
}  // namespace shardwise

namespace shardwise {
namespace {

TEST(PlanText, TheCompareTableComparesTheSearchesBeforeTheOverlap) {
  // a chosen search whose plan refine_two_batch_overlap replaced after the search (529.1 ->
  // 663.5) beside a compared engine's 481.8: the rows compare the searches as they searched,
  // 481.8 / 529.1 = 91.1% (against 663.5: 72.6%), and a line gives the overlap's value
  Made r = make_report_case("llama-3.1-8b", "h100x8", "decode-16k");
  ASSERT_TRUE(r.o.search.found);
  ASSERT_EQ(r.o.compared.size(), 1u);
  r.o.search.best_value = 663.5;
  r.o.search.value_before_overlap = 529.1;
  r.o.search.overlap_note = "two-batch overlap at tp 1 x attn_dp 8 (ep 8), batch 64: 663.5 against the search's 529.1 (+25.4%)";
  r.o.compared[0].best_value = 481.8;
  const std::string text = plan_text(r.ctx, r.file, r.o);
  EXPECT_NE(text.find("529.1     100.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("481.8      91.1%"), std::string::npos) << text;
  EXPECT_NE(text.find("gained the two-batch overlap, 663.5 tokens/s per GPU"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(plan_json(r.ctx, r.file, r.o));
  EXPECT_DOUBLE_EQ(j.at("search_objective_before_overlap").get<double>(), 529.1);
  // the HTML report's table and its convergence chart's optimum line compare the same way
  const std::string html = plan_html(r.ctx, r.file, r.o);
  EXPECT_NE(html.find("<td class=\"n\">529.1</td><td class=\"n\">100.0%</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\">481.8</td><td class=\"n\">91.1%</td>"), std::string::npos);
  EXPECT_NE(html.find("gained the two-batch overlap, 663.5 tokens/s per GPU"), std::string::npos);
  // without an overlap the chosen row is the plan's own value and no such line
  r.o.search.value_before_overlap = 0;
  r.o.search.overlap_note.clear();
  const std::string plain = plan_text(r.ctx, r.file, r.o);
  EXPECT_NE(plain.find("663.5     100.0%"), std::string::npos) << plain;
  EXPECT_NE(plain.find("481.8      72.6%"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("gained the two-batch overlap"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(plan_json(r.ctx, r.file, r.o)).at("search_objective_before_overlap").is_null());
}

}  // namespace
}  // namespace shardwise
