// Requests through a phase plan (serve/phases.hpp): the schedule agrees with the closed form
// when every request is queued, the statistics are ordered, Little's law holds, an offered
// rate above the capacity is infeasible, equal layouts are the static plan's simulation.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "cost/calibration.hpp"
#include "model/loader.hpp"
#include "serve/phases.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

// Seesaw's case under arrivals (tests/support/sim_context.hpp)
SimContext serve_ctx(Arrivals arr, std::int64_t requests) {
  SimContext ctx = test_support::seesaw_pcie_ctx(Mode::kServe);
  ctx.workload.serve.arrivals = arr;
  ctx.workload.serve.requests = requests;
  return ctx;
}

Plan layout(int tp, int pp) {
  Plan p;
  p.deg.tp = tp;
  p.deg.pp = pp;
  p.batch = 0;
  return p;
}

const PhasePlan kPlan{layout(1, 8), layout(8, 1), 320};

TEST(PhaseServing, QueuedRequestsRunAtTheClosedFormsRate) {
  // 2,000 requests queued at once: rounds of 320 as the closed form's, the last partial round
  // and each round's decode tail (the batch emptying) cost a few percent
  const SimContext ctx = serve_ctx(Arrivals{Arrivals::Kind::kBurst, 0, 0}, 2000);
  const ServeResult r = simulate_phases(ctx, kPlan);
  ASSERT_TRUE(r.feasible) << r.reason;
  SimContext off = ctx;
  off.workload.mode = Mode::kOffline;
  const PhaseCost c = evaluate_phases(off, kPlan);
  ASSERT_TRUE(c.metrics.feasible()) << c.metrics.reason;
  EXPECT_GT(r.output_tok_s_per_gpu, 0.85 * c.metrics.output_tok_s_per_gpu);
  EXPECT_LE(r.output_tok_s_per_gpu, 1.01 * c.metrics.output_tok_s_per_gpu);
  // percentiles ordered
  for (const LatencyStats* l : {&r.ttft_ms, &r.tpot_ms, &r.e2e_ms}) {
    EXPECT_LE(l->p50, l->p90);
    EXPECT_LE(l->p90, l->p99);
    EXPECT_LE(l->p99, l->max);
  }
}

TEST(PhaseServing, LittlesLawAndOverload) {
  // Poisson at a fifth of the capacity: feasible, and requests/s x mean E2E = mean in system
  const SimContext probe = serve_ctx(Arrivals{Arrivals::Kind::kPoisson, 1.0, 0}, 1500);
  const ServeResult cap = simulate_phases(probe, kPlan);
  ASSERT_GT(cap.capacity_requests_per_s, 0.0);
  const double capacity = cap.capacity_requests_per_s;
  const ServeResult low = simulate_phases(serve_ctx(Arrivals{Arrivals::Kind::kPoisson, 0.2 * capacity, 0}, 1500), kPlan);
  EXPECT_TRUE(low.feasible) << low.reason;
  ASSERT_GT(low.window_s, 0.0);
  ASSERT_GT(low.mean_in_system, 0.0);
  EXPECT_NEAR(low.requests_per_s * low.e2e_ms.mean / 1e3, low.mean_in_system, 0.15 * low.mean_in_system);
  // twice the capacity: infeasible, overloaded
  const ServeResult high = simulate_phases(serve_ctx(Arrivals{Arrivals::Kind::kPoisson, 2.0 * capacity, 0}, 1500), kPlan);
  EXPECT_FALSE(high.feasible);
  EXPECT_NE(high.reason.find("overloaded"), std::string::npos) << high.reason;
}

TEST(PhaseServing, EqualLayoutsAreTheStaticSimulationAndAClosedLoopIsRefused) {
  const SimContext ctx = serve_ctx(Arrivals{Arrivals::Kind::kPoisson, 0.5, 0}, 300);
  const ServeResult ph = simulate_phases(ctx, PhasePlan{layout(8, 1), layout(8, 1), 0});
  const ServeResult st = simulate_serving(ctx, layout(8, 1));
  EXPECT_EQ(ph.feasible, st.feasible);
  EXPECT_DOUBLE_EQ(ph.output_tok_s_per_gpu, st.output_tok_s_per_gpu);
  EXPECT_DOUBLE_EQ(ph.ttft_ms.p99, st.ttft_ms.p99);
  const ServeResult closed = simulate_phases(serve_ctx(Arrivals{Arrivals::Kind::kClosed, 0, 8}, 100), kPlan);
  EXPECT_FALSE(closed.feasible);
  EXPECT_NE(closed.reason.find("closed loop"), std::string::npos);
}

}  // namespace
}  // namespace shardwise
