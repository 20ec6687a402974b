// Phase plans (Seesaw; docs/phases.md): every term of a round by hand, the static plan when
// the layouts are equal, more host bandwidth never slower, the plan file and the search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cost/calibration.hpp"
#include "cost/phases.hpp"
#include "core/rng.hpp"
#include "model/derived.hpp"
#include "model/loader.hpp"
#include "plan/plan_json.hpp"
#include "search/phases_search.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

// Seesaw's case, offline (tests/support/sim_context.hpp)
SimContext pcie_ctx(double pcie_gbs = 17.18) { return test_support::seesaw_pcie_ctx(Mode::kOffline, pcie_gbs); }

Plan layout(int tp, int pp, int replicas) {
  Plan p;
  p.deg.tp = tp;
  p.deg.pp = pp;
  p.deg.replicas = replicas;
  p.batch = 0;
  return p;
}

TEST(Phases, EveryTermOfARoundByHand) {
  const SimContext ctx = pcie_ctx();
  // prefill PP 8 -> decode TP 8, 320 sequences per round (more than the decode GPUs hold)
  PhasePlan pp{layout(1, 8, 1), layout(8, 1, 1), 320};
  const PhaseCost c = evaluate_phases(ctx, pp);
  ASSERT_TRUE(c.metrics.feasible()) << c.metrics.reason;
  ASSERT_TRUE(c.host_tier);
  EXPECT_EQ(c.buffer_seqs, 320);
  // the KV cache of a prompt: 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per
  // token, x 2,542 tokens = 832.96 MB; 320 of them over 8 GPUs = 33.318 GB per GPU, through
  // PCIe at 17.18 GB/s: 1.9394 s out (prefill) and 1.9394 s back (decode)
  const double kv_seq = 327680.0 * 2542.0;
  EXPECT_DOUBLE_EQ(kv_cache_bytes(ctx.model, ctx.formats.kv).for_context(2542).value(), kv_seq);
  EXPECT_NEAR(c.host_kv_bytes_per_gpu, 320.0 * kv_seq / 8.0, 1.0);
  EXPECT_NEAR(c.kv_offload_s, 320.0 * kv_seq / 8.0 / 17.18e9, 1e-9);
  EXPECT_NEAR(c.kv_offload_s, 1.9394, 1e-3);
  // the first decode batch's KV before decoding starts: b sequences of the 320; the other
  // 320 - b come back during decode, as sequences finish
  EXPECT_NEAR(c.kv_first_s, static_cast<double>(c.decode_batch) * kv_seq / 8.0 / 17.18e9, 1e-9);
  EXPECT_NEAR(c.kv_reload_s, static_cast<double>(320 - c.decode_batch) * kv_seq / 8.0 / 17.18e9, 1e-9);
  EXPECT_NEAR(c.kv_first_s + c.kv_reload_s, c.kv_offload_s, 1e-9);
  EXPECT_DOUBLE_EQ(c.kv_relayout_s, 0.0);  // the host tier re-lays the KV out on its way
  // weights: 70B in bf16 over 8 GPUs either way, 17.2 GB per GPU; the A100-40GB cannot hold
  // both layouts beside the KV, so each switch reloads the incoming one from host memory
  if (!c.resident) {
    const double w = 2.0 * 68.98e9 / 8.0;  // about, per layout
    EXPECT_NEAR(c.weights_s, 2.0 * w / 17.18e9, 0.05 * 2.0 * w / 17.18e9);
  }
  // two switches, one engine step each
  EXPECT_DOUBLE_EQ(c.switch_s, 2.0 * ctx.params.step_overhead_us * 1e-6);
  // the round and the throughput
  const double round = std::max(c.prefill_s, c.kv_offload_s) + std::max(c.decode_s, c.kv_reload_s) + c.kv_first_s + c.kv_relayout_s +
                       c.weights_s + c.switch_s;
  EXPECT_NEAR(c.round_s, round, 1e-12);
  EXPECT_NEAR(c.metrics.output_tok_s_per_gpu, 320.0 * 297.0 / round / 8.0, 1e-9);
  // the decode phase: 320 sequences, decode_batch at a time, 297 tokens each
  EXPECT_NEAR(c.metrics.tpot_s * (320.0 / static_cast<double>(c.decode_batch)) * 297.0, std::max(c.decode_s, c.kv_reload_s), 1e-9);
}

TEST(Phases, AllOnTheGpusTheKvIsReLaidOutPeerToPeer) {
  const SimContext ctx = pcie_ctx();
  PhasePlan pp{layout(1, 8, 1), layout(8, 1, 1), 0};  // the buffer: what the decode GPUs hold
  const PhaseCost c = evaluate_phases(ctx, pp);
  ASSERT_TRUE(c.metrics.feasible()) << c.metrics.reason;
  EXPECT_FALSE(c.host_tier);
  EXPECT_EQ(c.buffer_seqs, c.decode_batch);
  EXPECT_DOUBLE_EQ(c.kv_offload_s + c.kv_reload_s + c.kv_first_s, 0.0);
  // no NVLink: GPU to GPU over PCIe, b x 832.96 MB over 8 GPUs at 17.18 GB/s
  EXPECT_NEAR(c.kv_relayout_s, static_cast<double>(c.buffer_seqs) * 327680.0 * 2542.0 / 8.0 / 17.18e9, 1e-9);
  // the prefill phase holds the buffer's KV until the switch: two replicas of PP 4 hold 34.8 GB
  // of weights per GPU, and the decode GPUs' 196 prompts (196 x 832.96 MB / 8 = 20.4 GB per
  // GPU) do not fit beside them in 42.9 GB; with a host tier (200 sequences) they are offloaded
  // as they are made, and the plan fits
  const PhaseCost held = evaluate_phases(ctx, PhasePlan{layout(1, 4, 2), layout(8, 1, 1), 0});
  EXPECT_EQ(held.metrics.infeasible, Infeasible::kMemory) << held.metrics.reason;
  EXPECT_NE(held.metrics.reason.find("prefill phase"), std::string::npos) << held.metrics.reason;
  EXPECT_TRUE(evaluate_phases(ctx, PhasePlan{layout(1, 4, 2), layout(8, 1, 1), 200}).metrics.feasible());
}

TEST(Phases, EqualLayoutsAreExactlyTheStaticPlan) {
  const SimContext ctx = pcie_ctx();
  const std::vector<Plan> layouts{layout(8, 1, 1), layout(4, 2, 1), layout(2, 4, 1), layout(1, 8, 1), layout(4, 1, 2)};
  for (const Plan& l : layouts) {
    for (std::int64_t buf : {0, 100, 1000}) {
      const PhaseCost c = evaluate_phases(ctx, PhasePlan{l, l, buf});
      const Metrics s = evaluate(ctx, l);
      EXPECT_TRUE(c.is_static);
      EXPECT_EQ(c.metrics.feasible(), s.feasible());
      EXPECT_DOUBLE_EQ(c.metrics.output_tok_s_per_gpu, s.output_tok_s_per_gpu);
      EXPECT_DOUBLE_EQ(c.metrics.tpot_s, s.tpot_s);
      EXPECT_DOUBLE_EQ(c.metrics.ttft_s, s.ttft_s);
      EXPECT_EQ(c.metrics.batch, s.batch);
    }
  }
}

TEST(Phases, MoreHostBandwidthIsNeverSlower) {
  const std::vector<Plan> layouts{layout(8, 1, 1), layout(4, 2, 1), layout(2, 4, 1), layout(1, 8, 1), layout(4, 1, 2), layout(2, 2, 2)};
  Rng rng(11);
  int compared = 0;
  for (int i = 0; i < 40; ++i) {
    const Plan& p = layouts[rng.below(layouts.size())];
    const Plan& d = layouts[rng.below(layouts.size())];
    const auto buf = static_cast<std::int64_t>(rng.below(2001));
    const double bw = 4.0 + 60.0 * rng.uniform();
    const PhaseCost slow = evaluate_phases(pcie_ctx(bw), PhasePlan{p, d, buf});
    const PhaseCost fast = evaluate_phases(pcie_ctx(bw * 2.0), PhasePlan{p, d, buf});
    if (!slow.metrics.feasible()) continue;
    ASSERT_TRUE(fast.metrics.feasible());
    EXPECT_GE(fast.metrics.output_tok_s_per_gpu, slow.metrics.output_tok_s_per_gpu * (1 - 1e-12));
    ++compared;
  }
  EXPECT_GT(compared, 10);
}

TEST(Phases, RulesAndLimitsSayWhy) {
  const SimContext ctx = pcie_ctx();
  // different GPU counts
  PhasePlan bad{layout(1, 4, 1), layout(8, 1, 1), 0};
  auto why = validate_phase_plan(bad, ctx.model, ctx.cluster);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("same GPUs"), std::string::npos) << *why;
  EXPECT_EQ(evaluate_phases(ctx, bad).metrics.infeasible, Infeasible::kInvalidPlan);
  // a host buffer too small for the round's KV cache
  PhaseOptions tiny;
  tiny.host_bytes_per_gpu = 1e9;
  const PhaseCost c = evaluate_phases(ctx, PhasePlan{layout(1, 8, 1), layout(8, 1, 1), 320}, tiny);
  EXPECT_EQ(c.metrics.infeasible, Infeasible::kMemory);
  EXPECT_NE(c.metrics.reason.find("host buffer"), std::string::npos) << c.metrics.reason;
  // a serving workload is refused with the reason
  SimContext serve = ctx;
  serve.workload.mode = Mode::kServe;
  const PhaseCost s = evaluate_phases(serve, PhasePlan{layout(1, 8, 1), layout(8, 1, 1), 0});
  EXPECT_EQ(s.metrics.infeasible, Infeasible::kInvalidPlan);
  EXPECT_NE(s.metrics.reason.find("offline"), std::string::npos);
}

TEST(Phases, PlanFileRoundTrip) {
  PlanFile f;
  f.plan = layout(8, 1, 1);
  f.plan.batch = 48;
  f.model = "llama-2-70b";
  PhasePlan pp{layout(1, 8, 1), f.plan, 320};
  f.phases = pp;
  const std::string text = plan_to_json(f);
  auto back = parse_plan_json(text, "plan.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->phases.has_value());
  EXPECT_EQ(back->phases->prefill.deg, pp.prefill.deg);
  EXPECT_EQ(back->phases->decode.deg, pp.decode.deg);
  EXPECT_EQ(back->phases->decode.batch, 48);
  EXPECT_EQ(back->phases->buffer_seqs, 320);
  EXPECT_EQ(plan_to_json(*back), text);
  // a bad field in a layout names its path
  std::string wrong = text;
  const auto at = wrong.find("\"batch\": 48", wrong.find("\"phases\""));
  ASSERT_NE(at, std::string::npos);
  wrong.replace(at, 11, "\"batch\": -3");
  auto e = parse_plan_json(wrong, "plan.json");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().field, "phases.decode.batch") << e.error().message();
  // and the layouts' keys are checked
  std::string unknown = text;
  unknown.replace(unknown.find("\"buffer_seqs\""), 13, "\"buffer_size\"");
  EXPECT_FALSE(parse_plan_json(unknown, "plan.json").ok());
}

TEST(Phases, TheSearchBeatsEveryPairItCanBeCheckedAgainst) {
  const SimContext ctx = pcie_ctx();
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload);
  PhaseSearchOptions o;
  o.top_k = 0;
  const PhaseSearchResult r = search_phases(ctx, space, o);
  ASSERT_TRUE(r.found) << r.why_none;
  ASSERT_TRUE(r.best_static.has_value());
  // the answer re-evaluates to itself, and no pair of the listed layouts at buffer 0 beats it
  EXPECT_DOUBLE_EQ(evaluate_phases(ctx, r.best, o.cost).metrics.output_tok_s_per_gpu, r.cost.metrics.output_tok_s_per_gpu);
  const std::vector<LayoutRates> layouts = layout_rates(ctx, space);
  for (const LayoutRates& p : layouts) {
    for (const LayoutRates& d : layouts) {
      if (p.plan.deg.total_gpus() != d.plan.deg.total_gpus()) continue;
      const PhaseCost c = evaluate_phases(ctx, PhasePlan{p.plan, d.plan, 0}, o.cost, false);
      if (c.metrics.feasible() && !c.is_static) {
        EXPECT_LE(c.metrics.output_tok_s_per_gpu, r.cost.metrics.output_tok_s_per_gpu * (1 + 1e-12));
      }
    }
  }
  // on PCIe with long prompts the phase plan beats the static plan (Seesaw's Fig. 11: 1.46x)
  EXPECT_GT(r.cost.metrics.output_tok_s_per_gpu, r.best_static->static_metrics.output_tok_s_per_gpu * 1.2);
}

}  // namespace
}  // namespace shardwise
