// GQA decode attention as measured (data/silicon/attention.csv; docs/silicon.md, "GQA decode
// attention"): the table, the curve by hand, the transfer between chips of one architecture,
// a folder of one's own rows, and where the cost model reads it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cost/gqa_decode_table.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

const char* kHead = "silicon,dtype,kernel,phase,batch,q_heads,kv_heads,head_dim,q_len,kv_len,causal,value,unit,source_locator\n";

TEST(GqaDecode, TheEmbeddedRowsNameCatalogGpusAndTheirBytes) {
  const auto& rows = builtin_silicon().attention_kernels;
  ASSERT_FALSE(rows.empty());
  for (const auto& r : rows) {
    EXPECT_TRUE(find_gpu(detail::source_key(r.silicon)).has_value()) << r.silicon;
    EXPECT_GT(r.seconds, 0.0);
    EXPECT_FALSE(r.locator.empty());
  }
  // FlashInfer PR 1415 on the B200: 4 sequences x 1,024 tokens x 8 KV heads x 64 dims x K and V
  // x 2 B (fp16) = 8,388,608 B in 8.2464 us (the PR's 973.91 GB/s counts q too, over 2^20 x 1e3)
  const auto it = std::find_if(rows.begin(), rows.end(), [](const AttentionKernelRow& r) { return r.silicon == "b200" && r.batch == 4 && r.kv_len == 1024; });
  ASSERT_NE(it, rows.end());
  EXPECT_EQ(it->bytes, 8388608.0);
  EXPECT_NEAR(it->seconds, 8.2464e-6, 1e-15);
}

TEST(GqaDecode, TheB200CurveByHand) {
  const GqaDecodeProfile p = gqa_decode_profile_for(*find_gpu("b200"), builtin_silicon());
  ASSERT_TRUE(p.present);
  EXPECT_EQ(p.curve.basis, Basis::kMeasured);
  EXPECT_EQ(p.scale, 1.0);
  // measured points: 128 x 1,024 tokens = 268,435,456 B in 52.2848 us; 128 x 4,096 =
  // 1,073,741,824 B in 175.7888 us
  EXPECT_NEAR(p.seconds(268435456.0), 52.2848e-6, 1e-12);
  EXPECT_NEAR(p.seconds(1073741824.0), 175.7888e-6, 1e-12);
  // beyond the largest: the last segment's marginal bandwidth, 805,306,368 B / 123.504 us
  // = 6.5205 TB/s; 2^31 B takes 175.7888 + 1,073,741,824 / 6.5205e12 = 340.46 us
  EXPECT_NEAR(p.seconds(2147483648.0) * 1e6, 175.7888 + 1073741824.0 / (805306368.0 / 123.504e-6) * 1e6, 1e-6);
  EXPECT_NEAR(p.seconds(2147483648.0) * 1e6, 340.46, 0.01);
  // below the smallest: its time (the launch and tail floor)
  EXPECT_NEAR(p.seconds(1000.0), 8.2464e-6, 1e-15);
  // in between, log-log: sqrt(268435456 x 1073741824) = 536,870,912 B takes
  // sqrt(52.2848 x 175.7888) = 95.87 us
  EXPECT_NEAR(p.seconds(536870912.0) * 1e6, std::sqrt(52.2848 * 175.7888), 1e-6);
}

TEST(GqaDecode, MoreBytesAreNeverFaster) {
  for (const char* gpu : {"b200", "gb200", "b300", "h100", "h200"}) {
    const GqaDecodeProfile p = gqa_decode_profile_for(*find_gpu(gpu), builtin_silicon());
    if (!p.present) continue;
    double last = 0;
    for (double b = 1e3; b < 1e11; b *= 1.37) {
      const double t = p.seconds(b);
      EXPECT_GE(t, last) << gpu << " at " << b << " B";
      last = t;
    }
  }
}

TEST(GqaDecode, ChipsOfOneArchitectureBorrowTheMeasuredOnesRows) {
  // GB200 and B300: the B200's rows, the time above the floor scaled by the HBM bandwidths
  // (8 TB/s each: x1)
  for (const char* gpu : {"gb200", "b300", "gb300"}) {
    const GqaDecodeProfile p = gqa_decode_profile_for(*find_gpu(gpu), builtin_silicon());
    ASSERT_TRUE(p.present) << gpu;
    EXPECT_EQ(p.curve.basis, Basis::kTransferred);
    EXPECT_NEAR(p.scale, 8.0e12 / find_gpu(gpu)->hbm_bandwidth.value(), 1e-12);
    EXPECT_NE(p.curve.source.find("b200 decode attention"), std::string::npos);
  }
  // no chip of theirs is measured: the fitted model
  for (const char* gpu : {"a100", "mi300x", "l40s"}) EXPECT_FALSE(gqa_decode_profile_for(*find_gpu(gpu), builtin_silicon()).present) << gpu;
  EXPECT_EQ(detail::architecture_sibling("h200"), "h100");
  EXPECT_EQ(detail::architecture_sibling("gb300"), "b200");
  EXPECT_EQ(detail::architecture_sibling("mi325x"), "");
}

TEST(GqaDecode, TheTransferScalesTheTimeAboveTheFloor) {
  // a table of one B200 point pair, carried to a GPU of half the bandwidth: floor + (t - floor) x 2
  auto rows = parse_attention_kernel_table(std::string(kHead) + "b200,bf16,k,decode,1,8,8,128,1,1024,0,10,us,x\n" +
                                               "b200,bf16,k,decode,64,8,8,128,1,16384,0,300,us,x\n",
                                           "a.csv");
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  SiliconTables t;
  t.attention_kernels = *rows;
  GpuSpec half = *find_gpu("gb200");
  half.hbm_bandwidth = BytesPerSecond(4.0e12);
  const GqaDecodeProfile p = gqa_decode_profile_for(half, t);
  ASSERT_TRUE(p.present);
  EXPECT_NEAR(p.scale, 2.0, 1e-12);
  // 64 x 16,384 x 8 x 128 x 2 x 2 B = 4,294,967,296 B: 10 + (300 - 10) x 2 = 590 us
  EXPECT_NEAR(p.seconds(4294967296.0) * 1e6, 590.0, 1e-9);
  EXPECT_NEAR(p.seconds(100.0) * 1e6, 10.0, 1e-9);  // the floor is not scaled
}

TEST(GqaDecode, BadRowsNameTheFileTheRowTheColumnAndTheValue) {
  const auto err = [](const std::string& row) {
    auto r = parse_attention_kernel_table(std::string(kHead) + row + "\n", "a.csv");
    return r.ok() ? std::string("parsed") : r.error().message();
  };
  EXPECT_EQ(err("b200,int4,k,decode,1,8,8,128,1,1024,0,10,us,x"),
            "a.csv: field 'row 2 dtype': expected bf16, fp16 or fp8 (the KV cache's format), found 'int4'");
  EXPECT_EQ(err("b200,bf16,k,verify,1,8,8,128,1,1024,0,10,us,x"), "a.csv: field 'row 2 phase': expected decode or prefill, found 'verify'");
  EXPECT_EQ(err("b200,bf16,k,decode,1,8,8,128,1,1024,0,10,ms,x"), "a.csv: field 'row 2 unit': expected us, found 'ms'");
  EXPECT_EQ(err("b200,bf16,k,decode,1.5,8,8,128,1,1024,0,10,us,x"), "a.csv: field 'row 2 batch': expected a positive whole number, found '1.5'");
  EXPECT_EQ(err("b200,bf16,k,decode,1,8,3,128,1,1024,0,10,us,x"), "a.csv: field 'row 2 kv_heads': expected a divisor of q_heads (8), found '3'");
  EXPECT_EQ(err("b200,bf16,k,decode,1,8,8,128,1,1024,2,10,us,x"), "a.csv: field 'row 2 causal': expected 0 or 1, found '2'");
  EXPECT_NE(err("b200,bf16,k,decode,1,8,8,128,1,0,0,10,us,x").find("row 2 kv_len"), std::string::npos);
  EXPECT_NE(err("b200,bf16,k,decode,1,8,8,128,1,1024,0,-1,us,x").find("row 2 value"), std::string::npos);
  // prefill rows and multi-token decode rows are checked and left out of the curve
  auto kept = parse_attention_kernel_table(std::string(kHead) + "b200,bf16,k,prefill,1,8,8,128,2048,2048,1,100,us,x\n" +
                                               "b200,fp8,k,decode,2,8,8,128,4,1024,0,10,us,x\n" + "b200,fp8,k,decode,2,8,8,128,1,1024,0,10,us,x\n",
                                           "a.csv");
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].bytes, 2.0 * 2 * 1024 * 8 * 128 * 1);  // fp8: 1 B per element
}

TEST(GqaDecode, AFolderOfOnesOwnRowsReplacesItsGpusRows) {
  const auto dir = std::filesystem::temp_directory_path() / "shardwise_gqa_decode_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "attention.csv") << kHead << "b200,bf16,FlashInfer BatchDecodeWithPagedKVCacheWrapper,decode,32,32,8,128,1,4096,0,100,us,my lab\n"
                                       << "b200,bf16,torch SDPA (flash_attention),prefill,1,32,8,128,4096,4096,1,900,us,my lab\n";
  auto t = load_silicon_dir(dir.string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  const GqaDecodeProfile b200 = gqa_decode_profile_for(*find_gpu("b200"), *t);
  ASSERT_TRUE(b200.present);
  EXPECT_EQ(b200.curve.rows, 1);
  EXPECT_EQ(b200.curve.basis, Basis::kMeasured);
  EXPECT_NE(b200.curve.source.find(dir.string()), std::string::npos);
  EXPECT_NEAR(b200.seconds(1.0) * 1e6, 100.0, 1e-9);
  // torch SDPA's decode rows (measure.py without FlashInfer) are not read: the built-in B200 curve stays
  std::ofstream(dir / "attention.csv") << kHead << "b200,bf16,torch SDPA (flash_attention),decode,32,32,8,128,1,4096,0,100,us,my lab\n";
  auto sdpa = load_silicon_dir(dir.string());
  ASSERT_TRUE(sdpa.ok()) << sdpa.error().message();
  const GqaDecodeProfile kept = gqa_decode_profile_for(*find_gpu("b200"), *sdpa);
  EXPECT_EQ(kept.curve.rows, 6);
  EXPECT_NE(kept.curve.source.find("data/silicon/attention.csv"), std::string::npos);
  // an unknown GPU is refused at its own row of the file, a prefill row before it counted
  std::ofstream(dir / "attention.csv") << kHead << "b200,bf16,k,prefill,1,8,8,128,64,64,1,10,us,x\n"
                                       << "b200,bf16,k,decode,1,8,8,128,1,1024,0,10,us,x\n"
                                       << "quantum9000,bf16,k,decode,1,8,8,128,1,1024,0,10,us,x\n";
  auto bad = load_silicon_dir(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("row 4 silicon"), std::string::npos) << bad.error().message();
  std::ofstream(dir / "attention.csv") << kHead << "quantum9000,bf16,k,prefill,1,8,8,128,64,64,1,10,us,x\n";
  auto bad_prefill = load_silicon_dir(dir.string());
  ASSERT_FALSE(bad_prefill.ok());
  EXPECT_NE(bad_prefill.error().message().find("row 2 silicon"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(GqaDecode, DecodeAttentionReadsTheCurveOnEveryPath) {
  auto m = load_model("llama-3.1-8b");
  auto c = cluster_from_preset("b200x1");
  auto h = cluster_from_preset("h100x1");
  ASSERT_TRUE(m.ok() && c.ok() && h.ok());
  for (const bool tables : {false, true}) {
    CostParams p = cost_params_for("b200");
    p.kernel_tables = tables;
    const SimContext ctx = make_context(*m, *c, test_support::decode(4096), p);
    EXPECT_TRUE(ctx.gqa_decode.present);
    Breakdown bd;
    evaluate(ctx, test_support::plan(1, 32), &bd);
    const auto it = std::find_if(bd.ops.begin(), bd.ops.end(), [](const OpCost& o) { return o.op == "attention" && o.compute_s > 0; });
    ASSERT_NE(it, bd.ops.end());
    // 32 sequences x 4,096 cached tokens x 8 KV heads x 128 x K and V x 2 B (bf16) =
    // 536,870,912 B: between the measured 268 MB and 1.07 GB points, 95.87 us
    EXPECT_EQ(it->hbm_bytes, 32.0 * 4096 * 8 * 128 * 2 * 2);
    EXPECT_EQ(it->basis, Basis::kMeasured);
    EXPECT_NE(it->table.find("data/silicon/attention.csv"), std::string::npos);
    EXPECT_NEAR(it->compute_s, std::sqrt(52.2848e-6 * 175.7888e-6) * ctx.params.scales.attention, 1e-12);
    // the H100 has no engine decode-attention rows (docs/silicon.md): the fitted model
    CostParams q = cost_params_for("h100");
    q.kernel_tables = tables;
    const SimContext hctx = make_context(*m, *h, test_support::decode(4096), q);
    EXPECT_FALSE(hctx.gqa_decode.present);
    Breakdown hb;
    evaluate(hctx, test_support::plan(1, 32), &hb);
    const auto ht = std::find_if(hb.ops.begin(), hb.ops.end(), [](const OpCost& o) { return o.op == "attention" && o.compute_s > 0; });
    ASSERT_NE(ht, hb.ops.end());
    EXPECT_EQ(ht->basis, Basis::kModel);
  }
  // an MLA model keeps its own path (FlashMLA's ceilings with the tables, else the fitted model)
  auto ds = load_model("deepseek-v3");
  ASSERT_TRUE(ds.ok());
  EXPECT_FALSE(make_context(*ds, *c, test_support::decode(4096), cost_params_for("b200")).gqa_decode.present);
}

TEST(GqaDecode, AttentionDpImbalanceStretchesOnlyTheTimeAboveTheFloor) {
  // Llama-3.1-8B offline on 8 B200 as 8 attention-DP groups of 8 sequences, 1,024 in and out:
  // the busiest group's decode attention is attn_dp_imbalance x the mean's above the measured
  // launch floor (8.2464 us); the floor itself is not stretched
  auto m = load_model("llama-3.1-8b");
  auto c = cluster_from_preset("b200x8");
  ASSERT_TRUE(m.ok() && c.ok());
  const SimContext ctx = make_context(*m, *c, test_support::fixed_workload(Mode::kOffline, 1024, 1024), cost_params_for("b200"));
  ASSERT_TRUE(ctx.gqa_decode.present);
  Plan plan = test_support::plan(1, 64);
  plan.deg.attn_dp = 8;
  const double skew = attn_dp_imbalance(ctx.workload, Phase::kDecode, 8, 8);
  // 1 + z(8) x (1,024 / sqrt 12) / ((1,024 + 512) x sqrt 8): above 1, the test can fail
  ASSERT_GT(skew, 1.01);
  Breakdown bd;
  evaluate(ctx, plan, &bd);
  const auto it = std::find_if(bd.ops.begin(), bd.ops.end(), [](const OpCost& o) { return o.op == "attention" && o.compute_s > 0; });
  ASSERT_NE(it, bd.ops.end());
  const double tm = ctx.gqa_decode.seconds(it->hbm_bytes);
  const double floor = std::min(tm, ctx.gqa_decode.curve.t_lo);
  EXPECT_NEAR(floor, 8.2464e-6, 1e-15);
  EXPECT_NEAR(it->compute_s, (floor + (tm - floor) * skew) * ctx.params.scales.attention, 1e-12);
  EXPECT_LT(it->compute_s, tm * skew * ctx.params.scales.attention);
}

}  // namespace
}  // namespace shardwise
