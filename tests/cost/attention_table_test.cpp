// MLA decode attention at FlashMLA's measured ceilings (data/silicon/mla_decode.csv;
// docs/silicon.md, "MLA decode attention"): the table, the shares by hand, where the
// cost model reads them.
#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace
}  // namespace shardwise
