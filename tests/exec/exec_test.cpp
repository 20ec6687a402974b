// The executor's MPI-free half: scaling a plan's model down, the single-rank
// reference, the expected byte ledger. The MPI runs are ctest entries exec.* (tests/CMakeLists.txt).
#include <cmath>
#include <limits>
#include <numeric>

#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "exec/ledger.hpp"
#include "exec/reference.hpp"
#include "exec/tiny.hpp"
#include "exec/verify.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"
#include "plan/space.hpp"

namespace sw = shardwise;
namespace ex = shardwise::exec;

namespace {

sw::ModelSpec model(const char* name) {
  auto m = sw::load_model(name);
  EXPECT_TRUE(m.ok());
  return m.value();
}

ex::Case scaled(const char* name, int tp, int pp = 1, int ep = 1, int a = 1, sw::Sharding sh = sw::megatron_sharding()) {
  sw::Plan p;
  p.deg.tp = tp;
  p.deg.pp = pp;
  p.deg.ep = ep;
  p.deg.attn_dp = a;
  p.sharding = sh;
  auto c = ex::scale_case(model(name), p, 7);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message());
  return c.value();
}

// (moe, windowed) of each class, in order of first appearance
std::vector<std::pair<bool, bool>> class_kinds(const sw::ModelSpec& m) {
  std::vector<std::pair<bool, bool>> out;
  for (const auto& c : m.layer_classes()) out.emplace_back(c.moe, c.window > 0);
  return out;
}

}  // namespace

TEST(ScaleCase, EveryPresetKeepsItsStructureOrNamesTheRule) {
  sw::Rng rng(11);
  int ok = 0, refused = 0;
  for (const auto& name : sw::model_preset_names()) {
    const sw::ModelSpec m = model(name.c_str());
    const auto cl = ex::exec_cluster(16);
    sw::Workload w;
    w.mode = sw::Mode::kDecode;
    w.context = 8;
    w.batch = 1;
    const sw::SearchSpace sp = sw::make_space(m, cl, w);
    for (int i = 0; i < 80; ++i) {
      const sw::Action act = sw::random_action(sp.sizes(), rng);
      sw::Plan p = sp.decode(act);
      auto c = ex::scale_case(m, p, 1);
      if (!c.ok()) {
        ++refused;
        EXPECT_FALSE(c.error().field.empty()) << c.error().message();
        continue;
      }
      ++ok;
      const ex::Case& k = c.value();
      EXPECT_EQ(k.plan.deg.tp, p.deg.tp);
      EXPECT_EQ(k.plan.deg.pp, p.deg.pp);
      EXPECT_EQ(k.plan.deg.ep, p.deg.ep);
      EXPECT_EQ(k.plan.deg.attn_dp, p.deg.attn_dp);
      EXPECT_EQ(k.plan.sharding, p.sharding);
      EXPECT_LE(k.ranks(), ex::kMaxRanks);
      EXPECT_FALSE(sw::validate_plan(k.plan, k.model, ex::exec_cluster(k.ranks())).has_value());
      EXPECT_EQ(class_kinds(k.model), class_kinds(m)) << name;
      EXPECT_EQ(k.model.attention, m.attention);
      EXPECT_EQ(k.model.mlp_gated, m.mlp_gated);
      EXPECT_EQ(k.model.is_moe(), m.is_moe());
      EXPECT_EQ(k.model.moe.num_shared > 0, m.moe.num_shared > 0);
      // the token rules of docs/exec.md
      const std::int64_t w_ranks = k.plan.deg.stage_width();
      EXPECT_EQ(k.plan.batch % (k.plan.deg.attn_dp * k.m), 0);
      EXPECT_EQ(k.seqs_per_micro() % k.plan.deg.tp, 0);
      EXPECT_EQ(k.model.hidden % w_ranks, 0);
      EXPECT_EQ(k.model.vocab % k.plan.deg.tp, 0);
      if (k.model.is_moe()) {
        const std::int64_t per_rank = k.seqs_per_micro() / k.plan.deg.tp;
        EXPECT_EQ(per_rank * k.model.moe.top_k % std::lcm(k.model.moe.num_experts, w_ranks), 0);
      }
    }
  }
  EXPECT_GT(ok, 100);
  EXPECT_GT(refused, 0);  // instances over 16 ranks among them
}

TEST(HeldWeights, EveryRankHoldsWhatTheSimulatorCountsForItsStage) {
  // the weights check of `shardwise verify` without MPI: for random valid plans of every preset,
  // the part of the weights each rank keeps (NaN elsewhere) is the simulator's weight memory of its stage
  sw::Rng rng(5);
  int checked = 0;
  for (const auto& name : sw::model_preset_names()) {
    const sw::ModelSpec m = model(name.c_str());
    sw::Workload wl;
    wl.mode = sw::Mode::kDecode;
    wl.context = 8;
    wl.batch = 1;
    const sw::SearchSpace sp = sw::make_space(m, ex::exec_cluster(16), wl);
    for (int i = 0; i < 40; ++i) {
      const sw::Action act = sw::random_action(sp.sizes(), rng);
      auto c = ex::scale_case(m, sp.decode(act), 3);
      if (!c.ok()) continue;
      const ex::Case& k = c.value();
      const ex::Weights full = ex::make_weights(k);
      const auto ctx = sw::make_context(k.model, ex::exec_cluster(k.ranks()), ex::exec_workload(k, sw::Mode::kDecode), sw::cost_params_for("gb200"));
      const auto stages = sw::stage_weight_bytes(ctx, k.plan);
      for (std::int64_t r = 0; r < k.ranks(); ++r) {
        double bytes = 0;
        (void)ex::held_weights(k, full, r, &bytes);
        EXPECT_DOUBLE_EQ(bytes, stages[static_cast<std::size_t>(r / k.plan.deg.stage_width())])
            << name << " rank " << r << " " << sw::sharding_to_string(k.plan.sharding);
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(HeldWeights, MegatronTp2ByHand) {
  // llama-3.1-8b scaled for tp 2: hidden 32, 4 heads and 2 kv heads of 8, MLP 32 gated, vocab 64, 1 layer.
  // Per rank: norms 2 x 32; q 32 x 32 / 2; k, v 2 x 32 x 16 / 2; o 32 x 32 / 2; gate+up 32 x 64 / 2;
  // down 32 x 32 / 2; embedding 64 x 32 / 2; LM head 32 x 64 / 2 + final norm 32
  // = 64 + 512 + 512 + 512 + 1024 + 512 + 1024 + 1024 + 32 = 5216 parameters = 10,432 bytes
  const ex::Case c = scaled("llama-3.1-8b", 2);
  const ex::Weights full = ex::make_weights(c);
  for (std::int64_t r = 0; r < 2; ++r) {
    double bytes = 0;
    const ex::Weights held = ex::held_weights(c, full, r, &bytes);
    EXPECT_DOUBLE_EQ(bytes, 10'432.0);
    // rank r keeps heads block r of wq: columns [16 r, 16 r + 16)
    EXPECT_FALSE(std::isnan(held.m("L0.wq")(0, 16 * r)));
    EXPECT_TRUE(std::isnan(held.m("L0.wq")(0, 16 * (1 - r))));
  }
}

TEST(ScaleCase, RefusesWithTheRule) {
  sw::Plan p;
  p.deg.tp = 32;
  auto c = ex::scale_case(model("llama-3.1-8b"), p, 1);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().field, "instance");
  p.deg.tp = 2;
  p.deg.ep = 2;
  c = ex::scale_case(model("llama-3.1-8b"), p, 1);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().field, "ep");
}

TEST(ScaleCase, KvHeadsStayFewerThanTpWhenTheyWere) {
  // llama-3.1-8b has 8 kv heads: at tp 16 each kv head is shared by 2 ranks, and the
  // scaled model keeps that (8 kv heads, head dim a multiple of 16 / 8 = 2)
  const ex::Case c = scaled("llama-3.1-8b", 16);
  EXPECT_EQ(c.model.num_kv_heads, 8);
  EXPECT_EQ(c.model.num_heads % 16, 0);
  EXPECT_EQ(c.model.head_dim % 2, 0);
}

TEST(Reference, DecodeWithTheCacheEqualsRecomputingThePrompt) {
  for (std::int64_t window : {0, 3}) {
    ex::Case c = scaled("llama-3.1-8b", 1);
    c.decode_steps = 1;
    for (auto& w : c.model.layer_window) w = window;
    const ex::Weights w = ex::make_weights(c);
    const ex::Inputs in = ex::make_inputs(c);
    const ex::Logits cached = ex::reference_run(c, w, in);
    // the same tokens as one longer prompt
    ex::Case longer = c;
    longer.isl = c.isl + 1;
    longer.decode_steps = 0;
    ex::Inputs in2;
    in2.prompt = in.prompt;
    for (std::size_t s = 0; s < in2.prompt.size(); ++s) in2.prompt[s].push_back(in.decode[0][s]);
    const ex::Logits full = ex::reference_run(longer, w, in2);
    for (std::int64_t s = 0; s < c.plan.batch; ++s) {
      const auto& a = cached.at({s, 1});
      const auto& b = full.at({s, 0});
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << "window " << window;
    }
  }
}

TEST(Reference, WindowAndRoutingChangeTheResult) {
  // sanity: the features the executor must reproduce are not no-ops
  ex::Case c = scaled("llama-3.1-8b", 1);
  const ex::Weights w = ex::make_weights(c);
  const ex::Inputs in = ex::make_inputs(c);
  const ex::Logits full = ex::reference_run(c, w, in);
  for (auto& win : c.model.layer_window) win = 3;
  EXPECT_GT(ex::max_relative_error(ex::reference_run(c, w, in), full), 1e-3);
}

TEST(Reference, RelativeErrorTreatsMissingAndNanAsFailures) {
  ex::Logits a{{{0, 0}, {1.0, -2.0}}};
  ex::Logits b = a;
  EXPECT_EQ(ex::max_relative_error(b, a), 0.0);
  b[{0, 0}][1] = -2.0 + 2e-9;  // 2e-9 / max|y| = 2 -> 1e-9
  EXPECT_NEAR(ex::max_relative_error(b, a), 1e-9, 1e-15);
  b[{0, 0}][0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isinf(ex::max_relative_error(b, a)));
  EXPECT_TRUE(std::isinf(ex::max_relative_error(ex::Logits{}, a)));
}

TEST(Routing, BalancedCopiesAreDistinctExperts) {
  // copy j of token t goes to expert (t k + j) mod E: k consecutive experts, distinct when k <= E
  for (std::int64_t t = 0; t < 20; ++t) {
    EXPECT_EQ(ex::routed_expert(t, 0, 2, 4), (2 * t) % 4);
    EXPECT_NE(ex::routed_expert(t, 0, 2, 4), ex::routed_expert(t, 1, 2, 4));
  }
}

TEST(ExpectedLedger, MegatronDenseIsTwoAllReducesPerLayerByHand) {
  // llama-3.1-8b scaled for tp 2: hidden 32, vocab 64; s = tp = 2 sequences per micro-batch,
  // prompt 8, 2 decode steps, m = 1.
  const ex::Case c = scaled("llama-3.1-8b", 2);
  ASSERT_EQ(c.model.hidden, 32);
  ASSERT_EQ(c.model.vocab, 64);
  ASSERT_EQ(c.plan.batch, 2);
  const auto l = ex::expected_ledger(c);
  ASSERT_TRUE(l.ok());
  const auto at = [&](sw::Phase ph, std::int64_t layer, const char* op, sw::CollKind k) {
    auto it = l->find(ex::LedgerKey{ph, layer, op, k, "tp"});
    return it == l->end() ? -1.0 : it->second;
  };
  // prefill: 16 tokens x 32 x 2 B = 1024 B; all-reduce 2 (n-1)/n x 1024 = 1024 B per GPU, x 2 GPUs = 2048
  EXPECT_DOUBLE_EQ(at(sw::Phase::kPrefill, 0, "ffn_norm", sw::CollKind::kAllReduce), 2048.0);
  EXPECT_DOUBLE_EQ(at(sw::Phase::kPrefill, 0, "layer_out", sw::CollKind::kAllReduce), 2048.0);
  // decode: 2 tokens x 32 x 2 B = 128 B -> 128 per GPU, x 2 GPUs x 2 steps = 512
  EXPECT_DOUBLE_EQ(at(sw::Phase::kDecode, 0, "ffn_norm", sw::CollKind::kAllReduce), 512.0);
  // logits in fp32: prefill 2 rows x 64 x 4 B = 512 B, all-gather (n-1)/n -> 256 per GPU, x 2 = 512
  EXPECT_DOUBLE_EQ(at(sw::Phase::kPrefill, -1, "lm_head", sw::CollKind::kAllGather), 512.0);
  // nothing else per layer
  int per_layer = 0;
  for (const auto& [k, v] : l.value()) per_layer += k.layer == 0 ? 1 : 0;
  EXPECT_EQ(per_layer, 4);
}

TEST(ExpectedLedger, ExpertDispatchByHand) {
  // qwen3-30b-a3b for tp 2, ep 2: 4 experts top-2, W = 2; n k % lcm(4, 2) = 0 gives n = 2 tokens per
  // rank, s = 4 sequences. With ffn_norm = tokens the MoE input is split over the tokens, so the
  // copies travel: decode T = 4 tokens, dispatch all-to-all of T k h 2 = 4 x 2 x 32 x 2 = 512 B:
  // each GPU holds 512 / 2 = 256 B of copies and sends (n-1)/n of them: 128 B; x 2 GPUs x 2 steps = 512
  sw::Sharding sp = sw::megatron_sharding();
  sp[static_cast<std::size_t>(sw::Slot::kFfnNorm)] = 1;  // tokens
  const ex::Case c = scaled("qwen3-30b-a3b", 2, 1, 2, 1, sp);
  ASSERT_EQ(c.model.moe.num_experts, 4);
  ASSERT_EQ(c.model.moe.top_k, 2);
  ASSERT_EQ(c.seqs_per_micro(), 4);
  const auto l = ex::expected_ledger(c);
  ASSERT_TRUE(l.ok());
  EXPECT_DOUBLE_EQ(l->at(ex::LedgerKey{sw::Phase::kDecode, 0, "dispatch", sw::CollKind::kAllToAll, "mlp"}), 512.0);
  EXPECT_DOUBLE_EQ(l->at(ex::LedgerKey{sw::Phase::kDecode, 0, "combine", sw::CollKind::kAllToAll, "mlp"}), 512.0);
  // Megatron's ffn_norm = none leaves the input whole on both ranks: no dispatch; the combine
  // leaves the gated sums [T, h] = 4 x 32 x 2 = 256 B as partial sums, reduced once at layer_out
  // by an all-reduce over the tp group: 2 x (1/2) x 256 = 256 B sent per GPU; x 2 GPUs x 2 steps = 1024
  const auto r = ex::expected_ledger(scaled("qwen3-30b-a3b", 2, 1, 2));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->count(ex::LedgerKey{sw::Phase::kDecode, 0, "dispatch", sw::CollKind::kAllToAll, "mlp"}), 0u);
  EXPECT_EQ(r->count(ex::LedgerKey{sw::Phase::kDecode, 0, "combine", sw::CollKind::kReduceScatter, "mlp"}), 0u);
  EXPECT_EQ(r->count(ex::LedgerKey{sw::Phase::kDecode, 0, "combine", sw::CollKind::kAllToAll, "mlp"}), 0u);
  EXPECT_DOUBLE_EQ(r->at(ex::LedgerKey{sw::Phase::kDecode, 0, "layer_out", sw::CollKind::kAllReduce, "tp"}), 1024.0);
}

TEST(ExpectedLedger, CompareFlagsMissingAndExtraEntries) {
  ex::Ledger want{{ex::LedgerKey{sw::Phase::kDecode, 0, "o_proj", sw::CollKind::kAllReduce, "tp"}, 512.0}};
  ex::Ledger got{{ex::LedgerKey{sw::Phase::kDecode, 0, "ffn_norm", sw::CollKind::kAllReduce, "tp"}, 512.0}};
  const auto rows = ex::compare_ledgers(got, want);
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_FALSE(rows[0].match());
  EXPECT_FALSE(rows[1].match());
  EXPECT_TRUE(ex::compare_ledgers(want, want)[0].match());
  // transport between ranks keeps every digit
  ex::Ledger odd{{ex::LedgerKey{sw::Phase::kPrefill, -1, "lm_head", sw::CollKind::kAllGather, "tp"}, 1234.5678901234567}};
  EXPECT_EQ(ex::deserialize_ledger(ex::serialize(odd)), odd);
}

TEST(Verify, RandomShardingIsSeededAndCanonical) {
  const sw::ModelSpec m = model("llama-3.1-8b");
  const auto a = ex::resolve_sharding("random:5", m);
  const auto b = ex::resolve_sharding("random:5", m);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value(), b.value());
  // a dense model has no router or experts: those slots stay at Megatron's choice
  EXPECT_EQ(a.value()[static_cast<std::size_t>(sw::Slot::kRouter)], 0);
  EXPECT_EQ(a.value()[static_cast<std::size_t>(sw::Slot::kExpertFfn1)], 0);
  EXPECT_FALSE(ex::resolve_sharding("random:x", m).ok());
  EXPECT_TRUE(ex::resolve_sharding("allgather", m).ok());
}
