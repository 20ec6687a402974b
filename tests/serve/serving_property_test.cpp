// Properties of the serving simulation over random deployments (aggregated and
// disaggregated), rates and users drawn from a seeded RNG: an offered rate above the
// measured capacity is never feasible, and a closed loop obeys Little's law (N users with
// no think time: throughput x mean time in the system = N, within 2%).
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "core/rng.hpp"
#include "serve/disagg.hpp"
#include "serve/serving.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

// Llama-3.1-8B on 8 H100, lognormal prompts (mean 512) and uniform outputs (16 .. 256).
SimContext ctx_with(const Arrivals& a, std::int64_t requests, std::uint64_t seed) {
  Workload w;
  w.name = "p";
  w.mode = Mode::kServe;
  w.isl = 512;
  w.osl = 136;
  w.serve.requests = requests;
  w.serve.seed = seed;
  w.serve.arrivals = a;
  w.serve.input = LengthDist{LengthDist::Kind::kLognormal, 512, 0.8, 16, 4096, {}};
  w.serve.output = LengthDist{LengthDist::Kind::kUniform, 0, 0, 16, 256, {}};
  return test_support::ctx_for("llama-3.1-8b", "h100x8", w);
}

std::int32_t pick(Rng& rng, std::initializer_list<std::int32_t> v) {
  return *(v.begin() + static_cast<std::ptrdiff_t>(rng.below(v.size())));
}

// A random aggregated deployment: tp 1, 2 or 4, as many replicas as fit on up to 8 GPUs.
Plan random_plan(Rng& rng) {
  Plan p = test_support::plan(pick(rng, {1, 2, 4}), 0);
  p.deg.replicas = static_cast<std::int32_t>(1 + rng.below(static_cast<std::uint64_t>(8 / p.deg.tp)));
  return p;
}

// A random disaggregated deployment on up to 8 GPUs: x prefill and y decode instances of tp 1 or 2.
DisaggPlan random_pools(Rng& rng) {
  DisaggPlan d;
  d.prefill = test_support::plan(pick(rng, {1, 2}), 0);
  d.decode = test_support::plan(pick(rng, {1, 2}), 0);
  const std::int64_t room = 8 - d.prefill.deg.tp - d.decode.deg.tp;  // one of each, then the rest
  d.prefill.deg.replicas = static_cast<std::int32_t>(1 + rng.below(static_cast<std::uint64_t>(room / d.prefill.deg.tp / 2 + 1)));
  const std::int64_t left = 8 - d.prefill.deg.replicas * d.prefill.deg.tp;
  d.decode.deg.replicas = static_cast<std::int32_t>(1 + rng.below(static_cast<std::uint64_t>(left / d.decode.deg.tp)));
  return d;
}

TEST(ServingProperty, AnOfferedRateAboveTheCapacityIsNeverFeasible) {
  Rng rng(20261125);
  int above = 0, below = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const bool pooled = trial % 2 == 1;
    const double rate = 5.0 * std::pow(120.0, rng.uniform());  // 5 .. 600 requests/s, log-uniform: both sides of most capacities
    const SimContext ctx = ctx_with(Arrivals{Arrivals::Kind::kPoisson, rate, 0}, 800, 1 + rng.below(1000));
    ServeResult r;
    std::string what;
    if (pooled) {
      const DisaggPlan d = random_pools(rng);
      what = fmt::format("{} x tp {} + {} x tp {}", d.prefill.deg.replicas, d.prefill.deg.tp, d.decode.deg.replicas, d.decode.deg.tp);
      r = simulate_disaggregated(ctx, d).total;
    } else {
      const Plan p = random_plan(rng);
      what = fmt::format("{} x tp {}", p.deg.replicas, p.deg.tp);
      r = simulate_serving(ctx, p);
    }
    ASSERT_GT(r.capacity_requests_per_s, 0) << what << ": " << r.reason;
    EXPECT_DOUBLE_EQ(r.offered_requests_per_s, rate);
    if (rate > r.capacity_requests_per_s) {
      EXPECT_FALSE(r.feasible) << what << " at " << rate << " of " << r.capacity_requests_per_s;
      EXPECT_LE(r.requests_per_s, r.capacity_requests_per_s * (1 + 1e-9)) << what;  // what is served is the capacity
      ++above;
    } else {
      ++below;
    }
  }
  EXPECT_GT(above, 2);  // both sides of the capacity were tried
  EXPECT_GT(below, 2);
}

TEST(ServingProperty, ClosedLoopsObeyLittlesLaw) {
  Rng rng(7);
  for (int trial = 0; trial < 10; ++trial) {
    const bool pooled = trial % 2 == 1;
    ServeResult r;
    std::string what;
    std::int64_t users = 0, per_instance = 0;  // users, and those one simulated instance holds
    if (pooled) {
      const DisaggPlan d = random_pools(rng);
      users = per_instance = 2 + static_cast<std::int64_t>(rng.below(200));  // the pools hold them all
      // (40 requests per user: a steady state needs each user's requests to cycle many times)
      what = fmt::format("{} x tp {} + {} x tp {}, {} users", d.prefill.deg.replicas, d.prefill.deg.tp, d.decode.deg.replicas,
                         d.decode.deg.tp, users);
      r = simulate_disaggregated(ctx_with(Arrivals{Arrivals::Kind::kClosed, 0, users}, std::max<std::int64_t>(2000, 40 * users),
                                          1 + rng.below(1000)), d).total;
    } else {
      const Plan p = random_plan(rng);
      per_instance = 1 + static_cast<std::int64_t>(rng.below(60));
      users = p.deg.replicas * per_instance;  // a multiple of the replicas
      what = fmt::format("{} x tp {}, {} users", p.deg.replicas, p.deg.tp, users);
      r = simulate_serving(ctx_with(Arrivals{Arrivals::Kind::kClosed, 0, users}, 2000 * p.deg.replicas, 1 + rng.below(1000)), p);
    }
    ASSERT_TRUE(r.requests > 0) << what << ": " << r.reason;
    ASSERT_GT(r.window_s, 0) << what;
    // occupancy (time-averaged inside the window) and throughput x time in the system (the deployment's)
    EXPECT_NEAR(r.mean_in_system / static_cast<double>(per_instance), 1.0, 0.02) << what;
    EXPECT_NEAR(r.requests_per_s * r.e2e_ms.mean / 1e3 / static_cast<double>(users), 1.0, 0.02) << what;
  }
}

}  // namespace
}  // namespace shardwise
