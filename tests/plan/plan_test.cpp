#include "plan/plan.hpp"

#include <gtest/gtest.h>

#include "model/loader.hpp"
#include "plan/plan_json.hpp"

namespace shardwise {
namespace {

TEST(Plan, SlotsAreTheTwelveFusedOpsWithMegatronFirst) {
  EXPECT_EQ(kNumSlots, 12);
  EXPECT_STREQ(slot_info(Slot::kFfn1).choices[0], "ffn");
  EXPECT_STREQ(slot_info(Slot::kFfn2).choices[0], "ffn");
  EXPECT_STREQ(slot_info(Slot::kAttention).choices[1], "context");
  EXPECT_EQ(sharding_to_string(megatron_sharding()), "megatron");
  EXPECT_EQ(sharding_to_string(paper_allgather_sharding()), "ffn2=hidden");
}

TEST(Plan, ShardingFile) {
  auto s = parse_sharding("attention: context\nffn2: hidden\n", "s.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(sharding_to_string(*s), "attention=context ffn2=hidden");
  auto bad = parse_sharding("attention: tokens\n", "s.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "s.yaml: field 'attention': expected one of heads, context, none, found the string \"tokens\"");
  auto slot = parse_sharding("mlp: ffn\n", "s.yaml");
  ASSERT_FALSE(slot.ok());
  EXPECT_NE(slot.error().message().find("expected a fused-op slot (embedding, attn_norm"), std::string::npos);
}

TEST(Plan, JsonRoundTrip) {
  PlanFile f;
  f.model = "deepseek-v3";
  f.cluster = "h100x64";
  f.workload = "decode-16k";
  f.plan.deg = {8, 2, 32, 4, 2};
  f.plan.batch = 256;
  f.plan.micro_batches = 2;
  f.plan.sharding = paper_allgather_sharding();
  f.plan.sharding[static_cast<std::size_t>(Slot::kAttention)] = 1;
  auto back = parse_plan_json(plan_to_json(f), "p.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->plan, f.plan);
  EXPECT_EQ(back->model, f.model);
  f.plan.batch = 0;  // "max"
  EXPECT_EQ(parse_plan_json(plan_to_json(f), "p.json")->plan.batch, 0);
  auto wrong = parse_plan_json(R"({"schema": "other/9", "degrees": {}})", "p.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("field 'schema'"), std::string::npos);
}

TEST(Plan, ValidationNamesTheRule) {
  const ModelSpec m = *load_model("qwen3-235b-a22b");  // 64 heads, 4 kv heads, 128 experts, 94 layers
  const ClusterSpec c = *cluster_from_preset("h100x64");
  Plan p;
  p.batch = 8;
  p.deg.tp = 8;  // a multiple of the 4 kv heads: kv heads are replicated, fine
  EXPECT_FALSE(validate_plan(p, m, c).has_value());
  p.deg.tp = 6;
  EXPECT_NE(validate_plan(p, m, c)->find("does not divide the 64 attention heads"), std::string::npos);
  p.deg.tp = 8;
  p.deg.ep = 3;
  EXPECT_NE(validate_plan(p, m, c)->find("ep 3 does not divide the stage width"), std::string::npos);
  p.deg.ep = 8;
  p.deg.pp = 95;
  EXPECT_NE(validate_plan(p, m, c)->find("pp 95 exceeds the 94 layers"), std::string::npos);
  p.deg.pp = 2;
  p.deg.attn_dp = 16;
  p.batch = 8;
  EXPECT_NE(validate_plan(p, m, c)->find("needs 256 GPUs"), std::string::npos);
}

TEST(Plan, RowParallelQkvCannotFeedReplicatedKvHeads) {
  // qwen3-235b-a22b: 4 kv heads. qkv_proj=hidden leaves partial sums that a reduce-scatter
  // splits over the tp ranks; with attention=heads and tp 8 > 4 kv heads, two ranks need the
  // same kv head, which a reduce-scatter cannot give.
  const ModelSpec m = *load_model("qwen3-235b-a22b");
  const ClusterSpec c = *cluster_from_preset("h100x64");
  Plan p;
  p.batch = 8;
  p.deg.tp = 8;
  p.deg.ep = 4;
  p.sharding[static_cast<std::size_t>(Slot::kQkv)] = static_cast<std::uint8_t>(find_choice(static_cast<int>(Slot::kQkv), "hidden"));
  const auto why = validate_plan(p, m, c);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("qkv_proj=hidden with attention=heads needs tp 8 <= the 4 kv heads"), std::string::npos) << *why;
  EXPECT_NE(why->find("reduce-scatter"), std::string::npos) << *why;
  p.deg.tp = 4;  // one kv head per rank: fine
  EXPECT_FALSE(validate_plan(p, m, c).has_value());
  p.deg.tp = 8;  // attention on none or context takes the replicated (all-reduced) projection: fine
  p.sharding[static_cast<std::size_t>(Slot::kAttention)] = static_cast<std::uint8_t>(find_choice(static_cast<int>(Slot::kAttention), "none"));
  EXPECT_FALSE(validate_plan(p, m, c).has_value());
  p.sharding[static_cast<std::size_t>(Slot::kAttention)] = static_cast<std::uint8_t>(find_choice(static_cast<int>(Slot::kAttention), "context"));
  EXPECT_FALSE(validate_plan(p, m, c).has_value());
}

TEST(Plan, HugeDegreesSaturateInsteadOfWrappingToZeroGpus) {
  // issue 16, defect 1: 2^20 x 2^20 x 16 x 2^20 = 2^64 wrapped to 0 GPUs in int64, so a plan
  // file with such degrees passed the GPU-count check ("feasible" on 0 GPUs, a division by
  // zero in launch). The products saturate at INT64_MAX and validation refuses the plan.
  Degrees d;
  d.tp = 1 << 20;
  d.attn_dp = 1 << 20;
  d.pp = 16;
  d.replicas = 1 << 20;
  EXPECT_EQ(d.stage_width(), std::int64_t{1} << 40);
  EXPECT_EQ(d.instance_gpus(), std::int64_t{1} << 44);
  EXPECT_EQ(d.total_gpus(), INT64_MAX);
  EXPECT_EQ(sat_mul(INT64_MAX, 2), INT64_MAX);
  EXPECT_EQ(sat_mul(-1, 5), 0);
  EXPECT_EQ(sat_mul(3, 5), 15);
  const ModelSpec m = *load_model("llama-3.1-70b");
  const ClusterSpec c = *cluster_from_preset("h100x8");
  Plan p;
  p.deg = d;
  p.batch = 1 << 24;
  const auto why = validate_plan(p, m, c);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("needs 9223372036854775807 GPUs"), std::string::npos) << *why;
}

TEST(PlanJson, APlanWithoutNamesRoundTrips) {
  // found by fuzz_plan_json: a plan file without "model" was written back with "model": "",
  // which the reader refuses (a name, when present, must not be empty)
  PlanFile f;
  f.plan.deg.replicas = 3;
  f.plan.batch = 16;
  const std::string text = plan_to_json(f);
  EXPECT_EQ(text.find("\"model\""), std::string::npos) << text;
  auto back = parse_plan_json(text, "p.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->plan, f.plan);
  EXPECT_TRUE(back->model.empty());
}

TEST(PlanJson, TheCostModelItWasMadeWithRoundTrips) {
  PlanFile f;
  f.plan.batch = 8;
  f.cost = PlanFile::Cost{true, "my-h100", "profile.yaml"};
  auto back = parse_plan_json(plan_to_json(f), "p.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->cost, f.cost);
  PlanFile g;  // none recorded: none written, none read back
  g.plan.batch = 8;
  EXPECT_EQ(plan_to_json(g).find("\"cost\""), std::string::npos);
  EXPECT_FALSE(parse_plan_json(plan_to_json(g), "p.json")->cost.has_value());
  auto bad = parse_plan_json(R"({"schema": "shardwise-plan/1", "degrees": {"tp": 1}, "batch": 1, "cost": {"tables": true}})", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("cost.tables"), std::string::npos) << bad.error().message();
}

TEST(PlanJson, TheEngineItWasMadeForRoundTrips) {
  PlanFile f;
  f.plan.batch = 8;
  f.engine = "sglang";
  f.engine_version = "0.5";
  f.decode_steps = 4;
  const std::string text = plan_to_json(f);
  auto back = parse_plan_json(text, "p.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->engine, std::optional<std::string>("sglang"));
  EXPECT_EQ(back->engine_version, std::optional<std::string>("0.5"));
  EXPECT_EQ(back->decode_steps, std::optional<std::int64_t>(4));  // engine_settings.decode_steps
  auto zero = parse_plan_json(R"({"schema": "shardwise-plan/1", "degrees": {"tp": 1}, "batch": 1, "engine_settings": {"decode_steps": 0}})", "p.json");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message().find("engine_settings.decode_steps"), std::string::npos) << zero.error().message();
  // none recorded: none read back, and no "engine" key written
  PlanFile g;
  g.plan.batch = 8;
  EXPECT_EQ(plan_to_json(g).find("\"engine\""), std::string::npos);
  // an unknown key inside, or an empty name, names the field
  auto bad = parse_plan_json(R"({"schema": "shardwise-plan/1", "degrees": {"tp": 1}, "batch": 1, "engine": {"name": "vllm", "flavour": 1}})", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("engine.flavour"), std::string::npos) << bad.error().message();
  auto empty = parse_plan_json(R"({"schema": "shardwise-plan/1", "degrees": {"tp": 1}, "batch": 1, "engine": {"name": ""}})", "p.json");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("engine.name"), std::string::npos) << empty.error().message();
}

}  // namespace
}  // namespace shardwise
