// MLA decode attention at FlashMLA's measured ceilings (data/silicon/mla_decode.csv;
// docs/silicon.md, "MLA decode attention"): the table, the shares by hand, where the
// cost model reads them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cost/attention_table.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

const char* kHead = "silicon,kernel,phase,metric,value,unit,source_locator\n";

TEST(AttentionTable, TheEmbeddedCeilingsGiveTheSharesByHand) {
  ASSERT_EQ(builtin_silicon().attention.size(), 2u);
  const MlaDecodeProfile h100 = mla_decode_profile_for(*find_gpu("h100"), builtin_silicon());
  ASSERT_TRUE(h100.present);
  // FlashMLA on the H800 (the H100's die, clocks and HBM): 3,000 GB/s of 3.35 TB/s = 0.8955,
  // 660 TFLOPS of 989.4 (bf16 dense) = 0.6671
  EXPECT_NEAR(h100.mem_share, 3000.0 / 3350.0, 1e-12);
  EXPECT_NEAR(h100.compute_share, 660.0 / 989.4, 1e-12);
  EXPECT_EQ(h100.basis, Basis::kMeasured);
  const MlaDecodeProfile h200 = mla_decode_profile_for(*find_gpu("h200"), builtin_silicon());
  ASSERT_TRUE(h200.present);
  EXPECT_EQ(h200.basis, Basis::kTransferred);
  EXPECT_EQ(h200.mem_share, h100.mem_share);  // the share carried to the H200's own HBM
  EXPECT_FALSE(mla_decode_profile_for(*find_gpu("b200"), builtin_silicon()).present);  // no dense B200 rows
  EXPECT_FALSE(mla_decode_profile_for(*find_gpu("mi300x"), builtin_silicon()).present);
}

TEST(AttentionTable, BadRowsNameTheFileTheRowAndTheValue) {
  auto unit = parse_attention_table(std::string(kHead) + "h800,k,decode,memory_bandwidth_max,3,TB/s,x\n", "a.csv");
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.error().message(), "a.csv: field 'row 2 unit': expected GB/s, found 'TB/s'");
  auto metric = parse_attention_table(std::string(kHead) + "h800,k,decode,speed,3,GB/s,x\n", "a.csv");
  ASSERT_FALSE(metric.ok());
  EXPECT_NE(metric.error().message().find("'speed'"), std::string::npos);
  auto phase = parse_attention_table(std::string(kHead) + "h800,k,prefill,throughput_max,3,TFLOPS,x\n", "a.csv");
  ASSERT_FALSE(phase.ok());
  EXPECT_EQ(phase.error().message(), "a.csv: field 'row 2 phase': expected decode, found 'prefill'");
  auto value = parse_attention_table(std::string(kHead) + "h800,k,decode,throughput_max,-3,TFLOPS,x\n", "a.csv");
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.error().message().find("row 2 value"), std::string::npos);
  EXPECT_NE(value.error().message().find("'-3'"), std::string::npos);
}

TEST(AttentionTable, MlaDecodeAttentionRunsAtTheCeilingsWithTheTablesOnly) {
  auto m = load_model("deepseek-v3");
  auto c = cluster_from_preset("h200x8");
  ASSERT_TRUE(m.ok() && c.ok());
  for (const bool tables : {false, true}) {
    CostParams p = cost_params_for("h200");
    p.kernel_tables = tables;
    const SimContext ctx = make_context(*m, *c, test_support::decode(1536), p);
    EXPECT_EQ(ctx.mla_decode.present, tables);
    Breakdown bd;
    evaluate(ctx, test_support::plan(8, 8), &bd);
    const auto it = std::find_if(bd.ops.begin(), bd.ops.end(), [](const OpCost& o) { return o.op == "attention" && o.compute_s > 0; });
    ASSERT_NE(it, bd.ops.end());
    if (!tables) {
      EXPECT_EQ(it->basis, Basis::kModel);
      continue;
    }
    EXPECT_EQ(it->basis, Basis::kTransferred);
    // 8 sequences x 1,536 cached tokens x (512 latent + 64 rope) x 2 B (bf16 cache) per layer
    // = 14,155,776 B: at 0.8955 x 4.8 TB/s, 3.293 us, above the compute time, plus the GEMM
    // tables' small-kernel floor
    EXPECT_EQ(it->hbm_bytes, 8.0 * 1536 * 576 * 2);
    const double tm = it->hbm_bytes / (4.8e12 * 3000.0 / 3350.0);
    const double tc = it->flops / (989.4e12 * 660.0 / 989.4);
    EXPECT_LT(tc, tm);
    EXPECT_NEAR(it->compute_s, (tm + ctx.params.gemm.floor_s) * ctx.params.scales.attention, 1e-12);
  }
}

// Prefill attention at the published kernels' ceilings (data/silicon/attention_prefill.csv;
// docs/silicon.md, "Prefill attention")
const char* kPrefillHead = "silicon,kernel,dtype,metric,value,unit,source_locator\n";

TEST(PrefillAttention, TheEmbeddedCeilingsGiveTheRatesByHand) {
  ASSERT_EQ(builtin_silicon().prefill_ceilings.size(), 3u);
  // FlashAttention-3 on the H100: 740 TFLOPS of 989.4 (bf16) = 0.7479, 1,200 of 1,978.9 (fp8) = 0.6064
  const PrefillAttentionProfile h100 = prefill_attention_profile_for(*find_gpu("h100"), builtin_silicon());
  ASSERT_TRUE(h100.present);
  EXPECT_NEAR(h100.bf16.share, 740.0 / 989.4, 1e-12);
  EXPECT_NEAR(h100.bf16.rate, 740e12, 1e3);
  EXPECT_NEAR(h100.fp8.rate, 1200e12, 1e3);
  EXPECT_EQ(h100.bf16.basis, Basis::kMeasured);
  EXPECT_EQ(h100.fp8.basis, Basis::kMeasured);
  // the H200 (the same die, clocks and peaks): transferred at the same shares
  const PrefillAttentionProfile h200 = prefill_attention_profile_for(*find_gpu("h200"), builtin_silicon());
  ASSERT_TRUE(h200.present);
  EXPECT_EQ(h200.bf16.basis, Basis::kTransferred);
  EXPECT_NEAR(h200.bf16.rate, 740e12, 1e3);
  // FlashMLA's SM100 MHA prefill on the B200: 1,460 of 2,250 = 0.6489; no fp8 row: fp8
  // attention at the bf16 kernel's rate, extrapolated
  const PrefillAttentionProfile b200 = prefill_attention_profile_for(*find_gpu("b200"), builtin_silicon());
  ASSERT_TRUE(b200.present);
  EXPECT_NEAR(b200.bf16.share, 1460.0 / 2250.0, 1e-12);
  EXPECT_EQ(b200.bf16.basis, Basis::kMeasured);
  EXPECT_EQ(b200.fp8.rate, b200.bf16.rate);
  EXPECT_EQ(b200.fp8.basis, Basis::kExtrapolated);
  // the GB200 (2,500 TFLOPS bf16): 0.6489 x 2,500 = 1,622.2 TFLOPS, transferred
  const PrefillAttentionProfile gb200 = prefill_attention_profile_for(*find_gpu("gb200"), builtin_silicon());
  ASSERT_TRUE(gb200.present);
  EXPECT_EQ(gb200.bf16.basis, Basis::kTransferred);
  EXPECT_NEAR(gb200.bf16.rate / 1e12, 1460.0 / 2250.0 * 2500.0, 1e-9);
  EXPECT_NE(gb200.bf16.source.find("the b200 row, carried to the gb200"), std::string::npos);
  for (const char* gpu : {"a100", "mi300x", "l40s"}) EXPECT_FALSE(prefill_attention_profile_for(*find_gpu(gpu), builtin_silicon()).present) << gpu;
}

TEST(PrefillAttention, BadRowsNameTheFileTheRowAndTheValue) {
  const auto err = [](const std::string& row) {
    auto r = parse_prefill_ceiling_table(std::string(kPrefillHead) + row + "\n", "p.csv");
    return r.ok() ? std::string("parsed") : r.error().message();
  };
  EXPECT_EQ(err("h100,k,int8,throughput_max,3,TFLOPS,x"), "p.csv: field 'row 2 dtype': expected bf16 or fp8, found 'int8'");
  EXPECT_EQ(err("h100,k,bf16,memory_bandwidth_max,3,TFLOPS,x"), "p.csv: field 'row 2 metric': expected throughput_max, found 'memory_bandwidth_max'");
  EXPECT_EQ(err("h100,k,bf16,throughput_max,3,GB/s,x"), "p.csv: field 'row 2 unit': expected TFLOPS, found 'GB/s'");
  EXPECT_NE(err("h100,k,bf16,throughput_max,0,TFLOPS,x").find("row 2 value"), std::string::npos);
  EXPECT_EQ(err("h100,k,bf16,throughput_max,3,TFLOPS,x"), "parsed");
}

TEST(PrefillAttention, PrefillAttentionRunsAtTheCeilingOnEveryPath) {
  auto m = load_model("llama-3.1-8b");
  auto c = cluster_from_preset("h100x1");
  ASSERT_TRUE(m.ok() && c.ok());
  for (const bool tables : {false, true}) {
    for (const bool fp8 : {false, true}) {
      CostParams p = cost_params_for("h100");
      p.kernel_tables = tables;
      Workload w = test_support::fixed_workload(Mode::kPrefill, 2048, 1);
      if (fp8) w.kv_dtype = DType::kFp8;
      const SimContext ctx = make_context(*m, *c, w, p);
      ASSERT_TRUE(ctx.prefill_attention.present);
      Breakdown bd;
      evaluate(ctx, test_support::plan(1, 1), &bd);
      const auto it = std::find_if(bd.ops.begin(), bd.ops.end(), [](const OpCost& o) { return o.op == "attention" && o.compute_s > 0; });
      ASSERT_NE(it, bd.ops.end());
      // causal prefill of 2,048 tokens, 32 heads x (128 + 128): 2 x 2,048 x 32 x 256 x 1,024
      // = 34,359,738,368 FLOP, at 740 TFLOPS (bf16 KV) = 46.43 us, at 1,200 (fp8 FMHA) = 28.63
      // us; the bytes (q, k, v, o and the cache: about 50 MB) take less at the H100's HBM
      EXPECT_EQ(it->flops, 2.0 * 2048 * 32 * 256 * 1024);
      const double rate = fp8 ? 1200e12 : 740e12;
      const double floor = tables ? ctx.params.gemm.floor_s : ctx.params.kernel_overhead_us * 1e-6;
      EXPECT_NEAR(it->compute_s, (it->flops / rate + floor) * ctx.params.scales.attention, 1e-12);
      EXPECT_EQ(it->basis, Basis::kMeasured);
      EXPECT_NE(it->table.find("data/silicon/attention_prefill.csv: h100 FlashAttention-3 forward"), std::string::npos);
    }
  }
  // an MLA model's prefill on the B200: its (non-absorbed, bf16) attention at FlashMLA's 1,460 TFLOPS
  auto ds = load_model("deepseek-v3");
  auto b = cluster_from_preset("b200x8");
  ASSERT_TRUE(ds.ok() && b.ok());
  const SimContext dctx = make_context(*ds, *b, test_support::fixed_workload(Mode::kPrefill, 4096, 1), cost_params_for("b200"));
  Breakdown db;
  evaluate(dctx, test_support::plan(8, 1), &db);
  const auto at = std::find_if(db.ops.begin(), db.ops.end(), [](const OpCost& o) { return o.op == "attention" && o.compute_s > 0; });
  ASSERT_NE(at, db.ops.end());
  EXPECT_EQ(at->basis, Basis::kMeasured);
  EXPECT_NE(at->table.find("b200 FlashMLA dense MHA prefill"), std::string::npos);
  // the roofline at 1,460 TFLOPS and the fitted memory share, plus the fitted per-op floor
  const double tc = at->flops / 1460e12, tm = at->hbm_bytes / (8.0e12 * dctx.params.mem_efficiency);
  EXPECT_NEAR(at->compute_s, (std::max(tc, tm) + dctx.params.kernel_overhead_us * 1e-6) * dctx.params.scales.attention, 1e-12);
}

TEST(PrefillAttention, AFolderOfOnesOwnCeilingsReplacesTheBuiltInOnes) {
  const auto dir = std::filesystem::temp_directory_path() / "shardwise_prefill_attention_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "attention_prefill.csv") << kPrefillHead << "b200,my FA4 build,bf16,throughput_max,1600,TFLOPS,my lab\n"
                                               << "b200,my FA4 build,fp8,throughput_max,2400,TFLOPS,my lab\n";
  auto t = load_silicon_dir(dir.string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  const PrefillAttentionProfile b200 = prefill_attention_profile_for(*find_gpu("b200"), *t);
  ASSERT_TRUE(b200.present);
  EXPECT_NEAR(b200.bf16.rate, 1600e12, 1e3);
  EXPECT_NEAR(b200.fp8.rate, 2400e12, 1e3);
  EXPECT_EQ(b200.fp8.basis, Basis::kMeasured);
  EXPECT_NE(b200.bf16.source.find(dir.string()), std::string::npos);
  EXPECT_NEAR(prefill_attention_profile_for(*find_gpu("h100"), *t).bf16.rate, 740e12, 1e3);  // the H100's built-in row stays
  std::ofstream(dir / "attention_prefill.csv") << kPrefillHead << "quantum9000,k,bf16,throughput_max,1,TFLOPS,x\n";
  auto bad = load_silicon_dir(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("row 2 silicon"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shardwise
