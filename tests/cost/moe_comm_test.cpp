// The expert-parallel dispatch and combine kernels, measured (data/silicon/moe_comm.csv;
// docs/silicon.md, "Dispatch and combine"): the table, the lookup by EP size and bytes by
// hand, the transfers, and where the step reads them (the engine's kernel, the topology, the
// phase) and where it keeps the alpha-beta model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "cost/engine.hpp"
#include "cost/moe_comm_table.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

const char* kHead = "silicon,family,library,op,ep,tokens,hidden,topk,payload_bytes,bytes,value,unit,source_locator\n";

const MoeCommRow* row_of(const std::string& silicon, const std::string& op, std::int64_t ep, std::int64_t tokens) {
  const auto& rows = builtin_silicon().moe_comm;
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const MoeCommRow& r) { return r.silicon == silicon && r.op == op && r.ep == ep && r.tokens == tokens; });
  return it == rows.end() ? nullptr : &*it;
}

TEST(MoeComm, TheEmbeddedTableParsesWithItsSources) {
  const auto& rows = builtin_silicon().moe_comm;
  // GB200: 4 EP sizes x 12 token counts x 2 ops; H800 DeepEP: 6 EP sizes x 2 ops; MORI-EP:
  // MI300X EP 8 and 16, MI355X EP 8, 16 and 32, x 2 ops
  ASSERT_EQ(rows.size(), 96u + 12u + 4u + 6u);
  for (const auto& r : rows) EXPECT_FALSE(r.locator.empty());
  // TensorRT-LLM's NVLinkOneSided, EP 8, 128 tokens per rank of DeepSeek's 7,168 hidden in
  // bf16 to top-8: 128 x 8 x 7,168 x 2 B = 14,680,064 B dispatched in 31.7 us
  const MoeCommRow* one = row_of("gb200", "dispatch", 8, 128);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->family, "nvlink_one_sided");
  EXPECT_EQ(one->bytes, 14'680'064.0);
  EXPECT_NEAR(one->seconds * 1e6, 31.7, 1e-9);
  // DeepEP's low-latency dispatch, fp8 with one fp32 scale per 128: 128 x 8 x 7,168 x
  // (1 + 4 / 128) B = 7,569,408 B in 77 us (H800, EP 8, de8cfca3's README)
  const MoeCommRow* ll = row_of("h800", "dispatch", 8, 128);
  ASSERT_NE(ll, nullptr);
  EXPECT_EQ(ll->family, "deepep_ll");
  EXPECT_EQ(ll->bytes, 7'569'408.0);
  EXPECT_NEAR(ll->seconds * 1e6, 77.0, 1e-9);
  EXPECT_NE(ll->locator.find("de8cfca3"), std::string::npos);
}

TEST(MoeComm, BadRowsNameTheFileTheRowAndTheValue) {
  auto blank = parse_moe_comm_table(std::string(kHead) + ",deepep_ll,x,dispatch,8,128,7168,8,2,1e7,50,us,x\n", "m.csv");
  ASSERT_FALSE(blank.ok());
  EXPECT_NE(blank.error().message().find("row 2 silicon"), std::string::npos);
  auto fam = parse_moe_comm_table(std::string(kHead) + "h100,nccl,x,dispatch,8,128,7168,8,2,1e7,50,us,x\n", "m.csv");
  ASSERT_FALSE(fam.ok());
  EXPECT_EQ(fam.error().message(), "m.csv: field 'row 2 family': expected nvlink_one_sided or deepep_ll, found 'nccl'");
  auto op = parse_moe_comm_table(std::string(kHead) + "h100,deepep_ll,x,gather,8,128,7168,8,2,1e7,50,us,x\n", "m.csv");
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.error().message().find("row 2 op"), std::string::npos);
  auto unit = parse_moe_comm_table(std::string(kHead) + "h100,deepep_ll,x,combine,8,128,7168,8,2,1e7,50,ms,x\n", "m.csv");
  ASSERT_FALSE(unit.ok());
  EXPECT_NE(unit.error().message().find("'ms'"), std::string::npos);
  auto ep = parse_moe_comm_table(std::string(kHead) + "h100,deepep_ll,x,combine,1,128,7168,8,2,1e7,50,us,x\n", "m.csv");
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.error().message(), "m.csv: field 'row 2 ep': expected a whole number of ranks, at least 2, found '1'");
  auto value = parse_moe_comm_table(std::string(kHead) + "h100,deepep_ll,x,combine,8,128,7168,8,2,1e7,-3,us,x\n", "m.csv");
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.error().message().find("row 2 value"), std::string::npos);
}

TEST(MoeComm, TheLookupByEpAndBytesByHand) {
  const MoeCommProfile gb = moe_comm_profile_for(*find_gpu("gb200"), MoeAllToAll::kNvlinkOneSided, builtin_silicon());
  ASSERT_TRUE(gb.present);
  EXPECT_EQ(gb.basis, Basis::kMeasured);
  EXPECT_TRUE(gb.one_domain);
  EXPECT_FALSE(gb.decode_only);
  ASSERT_EQ(gb.curves.size(), 4u);
  Basis b = Basis::kModel;
  // a measured point: EP 8, 128 tokens (14,680,064 B): 31.7 us dispatch, 38.1 us combine
  EXPECT_NEAR(gb.seconds(false, 8, 14'680'064.0, &b) * 1e6, 31.7, 1e-9);
  EXPECT_EQ(b, Basis::kMeasured);
  EXPECT_NEAR(gb.seconds(true, 8, 14'680'064.0, &b) * 1e6, 38.1, 1e-9);
  // EP 12, between EP 8 (31.7 us) and EP 16 (34.6 us) in log EP: f = ln(12/8) / ln 2 = 0.58496,
  // 31.7 x (34.6 / 31.7)^0.58496 = 33.37 us
  const double f = std::log(1.5) / std::log(2.0);
  EXPECT_NEAR(gb.seconds(false, 12, 14'680'064.0, &b) * 1e6, 31.7 * std::pow(34.6 / 31.7, f), 1e-9);
  EXPECT_NEAR(gb.seconds(false, 12, 14'680'064.0, &b) * 1e6, 33.37, 0.01);
  EXPECT_EQ(b, Basis::kMeasured);
  // EP 128, beyond the largest measured (64): EP 64's curve, extrapolated (41.6 us)
  EXPECT_NEAR(gb.seconds(false, 128, 14'680'064.0, &b) * 1e6, 41.6, 1e-9);
  EXPECT_EQ(b, Basis::kExtrapolated);
  // DeepEP's single measured size per EP: below it its time, above it its mean bandwidth
  // (7,569,408 B / 77 us), so twice the bytes take 154 us; both extrapolated
  const MoeCommProfile h = moe_comm_profile_for(*find_gpu("h200"), MoeAllToAll::kDeepEpLowLatency, builtin_silicon());
  ASSERT_TRUE(h.present);
  EXPECT_EQ(h.basis, Basis::kTransferred);
  EXPECT_TRUE(h.decode_only);
  EXPECT_EQ(h.node, 8);
  EXPECT_NEAR(h.seconds(false, 8, 7'569'408.0, &b) * 1e6, 77.0, 1e-9);
  EXPECT_EQ(b, Basis::kTransferred);
  EXPECT_NEAR(h.seconds(false, 8, 2 * 7'569'408.0, &b) * 1e6, 154.0, 1e-9);
  EXPECT_EQ(b, Basis::kExtrapolated);
  EXPECT_NEAR(h.seconds(false, 8, 1e5, &b) * 1e6, 77.0, 1e-9);
  EXPECT_EQ(b, Basis::kExtrapolated);
  EXPECT_NE(h.source.find("h800 deepep_ll"), std::string::npos);
}

TEST(MoeComm, WhichGpusCarryWhichRows) {
  const SiliconTables& t = builtin_silicon();
  const auto basis = [&](const char* gpu, MoeAllToAll k) {
    const MoeCommProfile p = moe_comm_profile_for(*find_gpu(gpu), k, t);
    return p.present ? p.basis : Basis::kModel;
  };
  EXPECT_EQ(basis("gb200", MoeAllToAll::kNvlinkOneSided), Basis::kMeasured);
  EXPECT_EQ(basis("gb300", MoeAllToAll::kNvlinkOneSided), Basis::kTransferred);
  // HGX B200 and B300 are not known to offer the fabric memory NVLinkOneSided allocates
  EXPECT_EQ(basis("b200", MoeAllToAll::kNvlinkOneSided), Basis::kModel);
  EXPECT_EQ(basis("h200", MoeAllToAll::kNvlinkOneSided), Basis::kModel);
  EXPECT_EQ(basis("h100", MoeAllToAll::kDeepEpLowLatency), Basis::kTransferred);
  EXPECT_EQ(basis("mi300x", MoeAllToAll::kDeepEpLowLatency), Basis::kMeasured);
  EXPECT_EQ(basis("mi325x", MoeAllToAll::kDeepEpLowLatency), Basis::kTransferred);
  EXPECT_EQ(basis("mi355x", MoeAllToAll::kDeepEpLowLatency), Basis::kMeasured);
  EXPECT_EQ(basis("a100", MoeAllToAll::kDeepEpLowLatency), Basis::kModel);
  EXPECT_EQ(basis("h200", MoeAllToAll::kModel), Basis::kModel);
}

TEST(MoeComm, MoreBytesAreNeverFaster) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> logb(std::log(1e3), std::log(1e10));
  std::uniform_int_distribution<int> eps(2, 300);
  for (const auto& [gpu, k] : {std::pair{"gb200", MoeAllToAll::kNvlinkOneSided}, std::pair{"h200", MoeAllToAll::kDeepEpLowLatency},
                               std::pair{"mi355x", MoeAllToAll::kDeepEpLowLatency}}) {
    const MoeCommProfile p = moe_comm_profile_for(*find_gpu(gpu), k, builtin_silicon());
    ASSERT_TRUE(p.present) << gpu;
    for (int i = 0; i < 300; ++i) {
      double a = std::exp(logb(rng)), b = std::exp(logb(rng));
      if (a > b) std::swap(a, b);
      const double ep = eps(rng);
      for (bool combine : {false, true}) {
        EXPECT_LE(p.seconds(combine, ep, a, nullptr), p.seconds(combine, ep, b, nullptr) * (1 + 1e-12)) << gpu << " ep " << ep;
      }
    }
  }
}

// One decode (or prefill) step of DeepSeek-V3 with attention DP x EP over `cluster`'s GPUs,
// `per_rank` sequences per rank (one prompt per rank in prefill), under `engine` (empty: the
// generic engine), with or without two-batch overlap.
Breakdown dp_ep_step(const char* cluster, std::int32_t ranks, const char* engine, bool tables, Mode mode = Mode::kDecode,
                     bool two_batch_overlap = true, std::int64_t per_rank = 64) {
  Workload w = test_support::decode(2048);
  if (mode == Mode::kPrefill) {
    w.mode = Mode::kPrefill;
    w.isl = 1024;
    w.context = 0;
  }
  const SimContext ctx = test_support::ctx_with("deepseek-v3", cluster, w, tables, engine);
  shardwise::Plan plan = test_support::plan(1, per_rank * ranks / (mode == Mode::kPrefill ? per_rank : 1));
  plan.deg.attn_dp = ranks;
  plan.deg.ep = ranks;
  plan.two_batch_overlap = two_batch_overlap;
  Breakdown bd;
  evaluate(ctx, plan, &bd);
  return bd;
}

const CollRecord* a2a_of(const Breakdown& bd, const char* op) {
  for (const auto& o : bd.ops) {
    if (o.op != op) continue;
    for (const auto& c : o.colls) {
      if (c.kind == CollKind::kAllToAll) return &c;
    }
  }
  return nullptr;
}

TEST(MoeComm, TheStepReadsTheEnginesKernelWhereTheRowsDescribeTheDeployment) {
  // SGLang with two-batch overlap (launched with --moe-a2a-backend deepep), 8 H200 in one
  // node, decode: DeepEP's rows (carried from the H800); the bytes each GPU sends stay the model's
  const Breakdown on = dp_ep_step("h200x8", 8, "sglang", true);
  const Breakdown off = dp_ep_step("h200x8", 8, "sglang", false);
  for (const char* op : {"dispatch", "combine"}) {
    const CollRecord* t = a2a_of(on, op);
    const CollRecord* m = a2a_of(off, op);
    ASSERT_NE(t, nullptr) << op;
    ASSERT_NE(m, nullptr) << op;
    EXPECT_NE(t->table.find("moe_comm.csv: h800 deepep_ll"), std::string::npos) << op;
    EXPECT_NE(t->basis, Basis::kModel) << op;
    EXPECT_EQ(m->basis, Basis::kModel) << op;
    EXPECT_DOUBLE_EQ(t->bytes_per_gpu, m->bytes_per_gpu) << op;
  }
  // the time is the curve's at the busiest rank's payload: more than the mean rank's
  // (full / 8), at most twice it at this load. On GB200's NVLinkOneSided curve (12 sizes) the
  // two differ: 512 tokens per rank of DeepSeek's 7,168 hidden to top-8 in fp4 (0.5625 B),
  // 16.5 MB dispatched, between the measured 128 and 256 tokens of bf16
  const Breakdown gb_on = dp_ep_step("gb200x72", 8, "trtllm", true, Mode::kDecode, false, 512);
  const MoeCommProfile g = moe_comm_profile_for(*find_gpu("gb200"), MoeAllToAll::kNvlinkOneSided, builtin_silicon());
  for (const char* op : {"dispatch", "combine"}) {
    const CollRecord* t = a2a_of(gb_on, op);
    ASSERT_NE(t, nullptr) << op;
    const bool combine = std::string(op) == "combine";
    EXPECT_GT(t->time_s, g.seconds(combine, 8, t->full_bytes / 8, nullptr) * 1.001) << op;
    EXPECT_LE(t->time_s, g.seconds(combine, 8, 2 * t->full_bytes / 8, nullptr)) << op;
  }
  // 16 H200 over two nodes at 50 GB/s per GPU: EP 16's rows
  const Breakdown h200_16 = dp_ep_step("h200x16", 16, "sglang", true);  // held: a2a_of points into it
  const CollRecord* two = a2a_of(h200_16, "dispatch");
  ASSERT_NE(two, nullptr);
  EXPECT_NE(two->basis, Basis::kModel);
  // TensorRT-LLM inside a GB200 NVL72 rack: NVLinkOneSided as measured
  const Breakdown gb200_8 = dp_ep_step("gb200x72", 8, "trtllm", true);
  const CollRecord* gb = a2a_of(gb200_8, "dispatch");
  ASSERT_NE(gb, nullptr);
  EXPECT_NE(gb->table.find("gb200 nvlink_one_sided"), std::string::npos);
}

TEST(MoeComm, ElsewhereTheModelPricesTheAllToAll) {
  const auto model = [](const Breakdown& bd) {
    const CollRecord* c = a2a_of(bd, "dispatch");
    return c != nullptr && c->basis == Basis::kModel && c->table.empty();
  };
  EXPECT_TRUE(model(dp_ep_step("h200x8", 8, "", true)));                         // the generic engine: NCCL
  EXPECT_TRUE(model(dp_ep_step("h200x8", 8, "sglang", true, Mode::kPrefill)));   // prefill: DeepEP's normal kernels
  EXPECT_TRUE(model(dp_ep_step("h200x8", 8, "trtllm", true)));                   // NVLinkOneSided: no Hopper rows
  EXPECT_TRUE(model(dp_ep_step("gb200x72", 8, "sglang", true)));                 // DeepEP's rows are of 8-GPU nodes on IB
  EXPECT_TRUE(model(dp_ep_step("b200x8", 8, "trtllm", true)));                   // HGX B200: not carried
  EXPECT_TRUE(model(dp_ep_step("h200x8", 8, "sglang", true, Mode::kDecode, false)));  // launched without DeepEP
}

TEST(MoeComm, AFolderOfOnesOwnRowsReplacesTheKernelItMeasures) {
  const auto dir = std::filesystem::temp_directory_path() / "shardwise_moe_comm_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "moe_comm.csv") << kHead << "h200,deepep_ll,DeepEP,dispatch,8,64,7168,8,1.03125,3784704,40,us,my lab\n"
                                      << "h200,deepep_ll,DeepEP,combine,8,64,7168,8,2,7340032,55,us,my lab\n";
  auto t = load_silicon_dir(dir.string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  const MoeCommProfile h = moe_comm_profile_for(*find_gpu("h200"), MoeAllToAll::kDeepEpLowLatency, *t);
  ASSERT_TRUE(h.present);
  EXPECT_EQ(h.basis, Basis::kMeasured);
  EXPECT_NEAR(h.seconds(true, 8, 7'340'032.0, nullptr) * 1e6, 55.0, 1e-9);
  EXPECT_NE(h.source.find(dir.string()), std::string::npos);
  // the H100 keeps the H800's built-in rows
  EXPECT_EQ(moe_comm_profile_for(*find_gpu("h100"), MoeAllToAll::kDeepEpLowLatency, *t).basis, Basis::kTransferred);
  std::ofstream(dir / "moe_comm.csv") << kHead << "quantum9000,deepep_ll,x,dispatch,8,64,7168,8,1,1e6,40,us,x\n";
  auto bad = load_silicon_dir(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("row 2 silicon"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(MoeComm, EngineProfilesNameTheirKernel) {
  EXPECT_EQ(load_engine_profile("trtllm")->moe_all_to_all, MoeAllToAll::kNvlinkOneSided);
  EXPECT_EQ(load_engine_profile("sglang")->moe_all_to_all, MoeAllToAll::kDeepEpLowLatency);
  EXPECT_EQ(load_engine_profile("vllm")->moe_all_to_all, MoeAllToAll::kDeepEpLowLatency);
  EXPECT_EQ(EngineTraits{}.moe_all_to_all, MoeAllToAll::kModel);
  auto bad = parse_engine_profile("name: x\nlabel: X\ndefault_version: \"1.0\"\nmax_num_tokens: 8192\nmoe_all_to_all: pplx\n", "x.yaml", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("moe_all_to_all"), std::string::npos);
  EXPECT_NE(bad.error().message().find("pplx"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace shardwise
