// The engines' custom all-reduce, measured (data/silicon/allreduce.csv; docs/silicon.md,
// "All-reduce"): the table, its curve by hand, and where the cost model reads it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "cost/allreduce_table.hpp"
#include "cost/engine.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

std::vector<AllReduceRow> engine_rows(std::int64_t group) {
  std::vector<AllReduceRow> out;
  for (const auto& r : builtin_allreduce_rows()) {
    if (r.group == group && r.kernel.rfind(kEngineCustomAllReduce, 0) == 0) out.push_back(r);
  }
  return out;
}

TEST(AllReduceTable, TheEmbeddedTableParsesWithItsSources) {
  const auto& rows = builtin_allreduce_rows();
  // 18 of SGLang PR 2904 (2/4/8 GPUs x 6 sizes) + 3 MSCCL++ cross-checks on the H100; NCCL on 8
  // B200s and, as the Hopper fit's cross-check, on 8 H200s: 16 sizes each (32 KiB to 1 GiB)
  ASSERT_EQ(rows.size(), 53u);
  std::size_t b200 = 0, h200 = 0;
  for (const auto& r : rows) {
    EXPECT_FALSE(r.locator.empty());
    b200 += r.silicon == "b200" && is_nccl_allreduce(r) ? 1 : 0;
    h200 += r.silicon == "h200" && !is_nccl_allreduce(r) && !is_engine_allreduce(r) ? 1 : 0;
  }
  EXPECT_EQ(b200, 16u);
  EXPECT_EQ(h200, 16u);
  EXPECT_EQ(engine_rows(8).size(), 6u);
}

TEST(AllReduceTable, BadRowsNameTheFileTheRowAndTheValue) {
  const std::string head = "silicon,collective,kernel,group,bytes,value,unit,source_locator\n";
  auto bad_unit = parse_allreduce_table(head + "h100,all_reduce,k,8,512,5.9,ms,x\n", "t.csv");
  ASSERT_FALSE(bad_unit.ok());
  EXPECT_NE(bad_unit.error().message().find("t.csv"), std::string::npos);
  EXPECT_NE(bad_unit.error().message().find("'ms'"), std::string::npos);
  auto bad_value = parse_allreduce_table(head + "h100,all_reduce,k,8,512,-1,us,x\n", "t.csv");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.error().message().find("row 2 value"), std::string::npos);  // the header is row 1
  EXPECT_FALSE(parse_allreduce_table(head + "h100,all_reduce,k,3.5,512,5,us,x\n", "t.csv").ok());
  EXPECT_FALSE(parse_allreduce_table(head + "h100,all_gather,k,8,512,5,us,x\n", "t.csv").ok());
  EXPECT_FALSE(parse_allreduce_table("silicon,bytes\nh100,5\n", "t.csv").ok());
}

TEST(AllReduceTable, TheCurveInterpolatesInLogLogByHand) {
  const AllReduceCurve c = build_allreduce_curve(engine_rows(8));
  // 8 GPUs, 114,688 B (8 tokens x 7168 x bf16) between 32,768 B (7.8 us) and 262,144 B
  // (16.7 us): f = ln(3.5) / ln(8) = 0.60246, t = 7.8 x (16.7 / 7.8)^f = 12.339 us
  EXPECT_NEAR(c.seconds_at(114'688) * 1e6, 12.339, 0.001);
  // below the smallest size: its time; 4,096 B measured 5.7 us after 5.9 at 512 B, taken as
  // the running maximum (more bytes never faster): 5.9
  EXPECT_NEAR(c.seconds_at(256) * 1e6, 5.9, 1e-9);
  EXPECT_NEAR(c.seconds_at(4096) * 1e6, 5.9, 1e-9);
  // above the largest (1 MiB, 33.8 us): the last segment's marginal bandwidth, 524,288 B /
  // (33.8 - 22.1) us = 44.81 GB/s: 2 MiB takes 33.8 + 1,048,576 / 44.81e9 s = 57.2 us
  EXPECT_NEAR(c.seconds_at(2'097'152) * 1e6, 33.8 + 1'048'576.0 / (524'288.0 / 11.7e-6) * 1e6, 1e-6);
  EXPECT_NEAR(c.seconds_at(2'097'152) * 1e6, 57.2, 0.05);
  EXPECT_TRUE(c.in_range(114'688));
  EXPECT_FALSE(c.in_range(2'097'152));
}

TEST(AllReduceTable, MoreBytesAreNeverFaster) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> logb(std::log(64.0), std::log(64.0 * 1024 * 1024));
  for (std::int64_t g : {2, 4, 8}) {
    const AllReduceCurve c = build_allreduce_curve(engine_rows(g));
    for (int i = 0; i < 500; ++i) {
      double a = std::exp(logb(rng)), b = std::exp(logb(rng));
      if (a > b) std::swap(a, b);
      EXPECT_LE(c.seconds_at(a), c.seconds_at(b) * (1 + 1e-12)) << g << " GPUs, " << a << " and " << b << " B";
    }
  }
}

TEST(AllReduceTable, MscclppsOneShotIsFasterThanTheEnginesUngraphedKernelByAtMost35Percent) {
  // MSCCL++'s one-shot kernel on 8 H100s (CI baselines) against the SGLang rows (no CUDA
  // graph: a launch included): 6.18 / 7.51, 6.62 / 9.05, 6.91 / 10.50 us at 24, 48, 72 KiB
  const AllReduceCurve c = build_allreduce_curve(engine_rows(8));
  int seen = 0;
  for (const auto& r : builtin_allreduce_rows()) {
    if (r.kernel.rfind("MSCCL++", 0) != 0) continue;
    ++seen;
    EXPECT_LE(r.seconds, c.seconds_at(r.bytes));
    EXPECT_GE(r.seconds, 0.65 * c.seconds_at(r.bytes));  // 6.91 / 10.50 = 0.658 at 72 KiB
  }
  EXPECT_EQ(seen, 3);
}

TEST(AllReduceTable, ProfilesByGpu) {
  const auto h100 = custom_allreduce_profile_for(*find_gpu("h100"));
  const auto h200 = custom_allreduce_profile_for(*find_gpu("h200"));
  ASSERT_TRUE(h100.present && h200.present);
  EXPECT_EQ(h100.of(8)->basis, Basis::kMeasured);
  EXPECT_EQ(h200.of(8)->basis, Basis::kTransferred);
  EXPECT_EQ(h200.of(2)->basis, Basis::kTransferred);
  EXPECT_NE(h100.of(8), nullptr);
  EXPECT_EQ(h100.of(16), nullptr);  // no 16-GPU rows: NCCL's model
  EXPECT_EQ(h100.of(6), nullptr);
  EXPECT_FALSE(custom_allreduce_profile_for(*find_gpu("b200")).present);  // no Blackwell rows
  EXPECT_FALSE(custom_allreduce_profile_for(*find_gpu("mi300x")).present);
}

TEST(NcclAllReduce, TheB200CurveIsItsRowsByHand) {
  const auto b200 = nccl_allreduce_profile_for(*find_gpu("b200"));
  ASSERT_TRUE(b200.present);
  const AllReduceCurve* c8 = b200.of(8);
  ASSERT_NE(c8, nullptr);
  EXPECT_EQ(c8->basis, Basis::kMeasured);
  EXPECT_EQ(c8->rows, 16);
  // the rows at 8 and 16 MiB: busbw 126.49 and 254.96 GB/s, time = bytes x 2 x 7/8 / busbw =
  // 116.06 and 115.15 us (the file: 116.1 and 115.2); 16 MiB takes the running maximum, 116.1
  EXPECT_NEAR(c8->seconds_at(8'388'608) * 1e6, 116.1, 1e-9);
  EXPECT_NEAR(c8->seconds_at(16'777'216) * 1e6, 116.1, 1e-9);
  // 32 MiB: 33,554,432 x 1.75 / 325.97e9 = 180.13 us (the file: 180.1)
  EXPECT_NEAR(c8->seconds_at(33'554'432) * 1e6, 180.1, 1e-9);
  // 2 GPUs at the same bus bandwidth: x (2 x 1/2) / (2 x 7/8) = x 0.571429 -> 180.1 / 1.75 = 102.91 us
  const AllReduceCurve* c2 = b200.of(2);
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->basis, Basis::kTransferred);
  EXPECT_NEAR(c2->seconds_at(33'554'432) * 1e6, 102.914, 0.001);
  // 4 GPUs: x 1.5 / 1.75 -> 154.37 us
  EXPECT_NEAR(b200.of(4)->seconds_at(33'554'432) * 1e6, 154.371, 0.001);
  EXPECT_EQ(b200.of(16), nullptr);  // beyond the rows' group sizes: the model
}

TEST(NcclAllReduce, ItsGenerationTakesItAndTheCrossCheckRowsAreNotRead) {
  for (const char* g : {"gb200", "b300", "gb300"}) {
    const auto p = nccl_allreduce_profile_for(*find_gpu(g));
    ASSERT_TRUE(p.present) << g;
    EXPECT_EQ(p.of(8)->basis, Basis::kTransferred) << g;
  }
  // the H200 rows check the Hopper fit and price nothing (docs/silicon.md, "All-reduce")
  for (const char* g : {"h200", "h100", "mi300x", "a100"}) EXPECT_FALSE(nccl_allreduce_profile_for(*find_gpu(g)).present) << g;
}

TEST(NcclAllReduce, MoreBytesAreNeverFasterAndMoreGpusNeverFaster) {
  const auto b200 = nccl_allreduce_profile_for(*find_gpu("b200"));
  for (std::int64_t g = 2; g < 8; ++g) {
    double last = 0;
    for (double b = 1e4; b < 4e9; b *= 1.7) {
      const double t = b200.of(g)->seconds_at(b);
      EXPECT_GE(t, last) << g << " GPUs, " << b << " B";
      EXPECT_LE(t, b200.of(g + 1)->seconds_at(b) * (1 + 1e-12)) << g << " GPUs, " << b << " B";
      last = t;
    }
  }
}

// Llama-3.1-70B decode at TP 8 on 8 B200 under TensorRT-LLM: the all-reduce of [batch, 8192]
// bf16 is NCCL's, as measured, above the custom kernel's 8,000,000 B, and the model's below
TEST(NcclAllReduce, AboveTheEnginesCustomKernelTheB200PaysNcclAsMeasured) {
  auto m = load_model("llama-3.1-70b");
  auto c = cluster_from_preset("b200x8");
  ASSERT_TRUE(m.ok() && c.ok());
  for (const bool tables : {false, true}) {
    CostParams p = cost_params_for("b200");
    p.kernel_tables = tables;
    const SimContext ctx = make_context(*m, *c, test_support::decode(1536), p, *load_engine_profile("trtllm"));
    ASSERT_TRUE(ctx.nccl_ar.present);
    // batch 1024: 1024 x 8192 x 2 = 16,777,216 B, above 8,000,000: 116.1 us as measured (the
    // curve's running maximum: the 8 MiB row)
    Breakdown big;
    evaluate(ctx, test_support::plan(8, 1024), &big);
    bool seen = false;
    for (const OpCost& o : big.ops) {
      for (const auto& cl : o.colls) {
        if (cl.kind != CollKind::kAllReduce) continue;
        seen = true;
        EXPECT_DOUBLE_EQ(cl.full_bytes, 16'777'216.0) << o.op;
        EXPECT_EQ(cl.basis, Basis::kMeasured) << o.op;
        EXPECT_NEAR(cl.time_s, 116.1e-6 * ctx.params.scales.comm, 1e-10) << o.op;
      }
    }
    EXPECT_TRUE(seen);
    // batch 256: 4,194,304 B, the custom kernel's: no B200 rows, the model
    Breakdown small;
    evaluate(ctx, test_support::plan(8, 256), &small);
    for (const OpCost& o : small.ops) {
      for (const auto& cl : o.colls) {
        if (cl.kind == CollKind::kAllReduce) {
          EXPECT_EQ(cl.basis, Basis::kModel) << o.op;
        }
      }
    }
  }
}

// DeepSeek-V3 decode at TP 8, batch 8, on 8 H200: ffn_norm's all-reduce of [8, 7168] bf16
SimContext deepseek(const std::string& cluster, bool tables, const char* engine) {
  return test_support::ctx_with("deepseek-v3", cluster, test_support::decode(1536), tables, engine);
}

const OpCost& moe_op(const Breakdown& bd, const std::string& name) {
  for (const OpCost& o : bd.ops) {
    if (o.op == name && o.layer_class == 1) return o;
  }
  ADD_FAILURE() << name;
  return bd.ops.front();
}

TEST(AllReduceTable, TheEngineAllReduceInsideNvlinkIsTheMeasuredOne) {
  const SimContext on = deepseek("h200x8", true, "sglang");
  ASSERT_TRUE(on.custom_ar.present);
  Breakdown bd;
  evaluate(on, test_support::plan(8, 8), &bd);
  const OpCost& fn = moe_op(bd, "ffn_norm");
  ASSERT_EQ(fn.colls.size(), 1u);
  EXPECT_EQ(fn.colls[0].kind, CollKind::kAllReduce);
  EXPECT_DOUBLE_EQ(fn.colls[0].full_bytes, 114'688.0);
  EXPECT_NEAR(fn.comm_s, 12.339e-6 * on.params.scales.comm, 1e-9);
  EXPECT_EQ(fn.colls[0].basis, Basis::kTransferred);
  // the engine runs its kernel whatever prices the rest of the step: without the tables the
  // same measured time (since session 31; before, only with them)
  const SimContext fitted = deepseek("h200x8", false, "sglang");
  ASSERT_TRUE(fitted.custom_ar.present);
  Breakdown bf;
  evaluate(fitted, test_support::plan(8, 8), &bf);
  const OpCost& ff = moe_op(bf, "ffn_norm");
  EXPECT_EQ(ff.colls[0].basis, Basis::kTransferred);
  EXPECT_NEAR(ff.comm_s, 12.339e-6 * fitted.params.scales.comm, 1e-9);
  // under the generic engine (no custom all-reduce): NCCL's alpha-beta model with its per-hop
  // latency, slower (14.5 us with Hopper's fit of session 31)
  const SimContext generic = deepseek("h200x8", true, nullptr);
  EXPECT_FALSE(generic.custom_ar.present);
  Breakdown b2;
  evaluate(generic, test_support::plan(8, 8), &b2);
  const OpCost& f2 = moe_op(b2, "ffn_norm");
  EXPECT_EQ(f2.colls[0].basis, Basis::kModel);
  EXPECT_GT(f2.comm_s, fn.comm_s);
}

TEST(AllReduceTable, GroupsOutsideTheMeasuredOnesKeepTheModel) {
  // TP 16 over two nodes: no 16-GPU rows, and the group leaves the NVLink domain
  const SimContext ctx = deepseek("h200x16", true, "sglang");
  Breakdown bd;
  evaluate(ctx, test_support::plan(16, 8), &bd);
  for (const OpCost& o : bd.ops) {
    for (const auto& c : o.colls) EXPECT_EQ(c.basis, Basis::kModel) << o.op;
  }
}

TEST(AllReduceTable, AGroupAcrossNvlinkDomainsOrOnASlowerLinkKeepsTheModel) {
  auto m = load_model("deepseek-v3");
  auto c = cluster_from_preset("h200x8");
  ASSERT_TRUE(m.ok() && c.ok());
  CostParams p = cost_params_for("h200");
  p.kernel_tables = true;
  const auto bases = [&](const ClusterSpec& cl) {
    const SimContext ctx = make_context(*m, cl, test_support::decode(1536), p, *load_engine_profile("sglang"));
    Breakdown bd;
    evaluate(ctx, test_support::plan(8, 8), &bd);
    return moe_op(bd, "ffn_norm").colls.at(0).basis;
  };
  EXPECT_EQ(bases(*c), Basis::kTransferred);
  // NVLink domains of 4: TP 8 spans two of them
  ClusterSpec split = *c;
  split.levels = {{"nvlink", 4, c->levels[0].bandwidth, c->levels[0].latency}, {"network", 8, c->gpu.network_bandwidth, c->gpu.network_latency}};
  EXPECT_EQ(bases(split), Basis::kModel);
  // an NVLink just slower than the one the rows were measured on
  ClusterSpec slow = *c;
  slow.levels[0].bandwidth = c->levels[0].bandwidth * 0.99;
  EXPECT_EQ(bases(slow), Basis::kModel);
}

TEST(AllReduceTable, TheMeasuredKernelIsNeverSlowerThanTheModelItReplaces) {
  // batch 1 .. 4096 on 8 H200s: every all-reduce is the faster of the two
  for (std::int64_t b : {1, 8, 64, 512, 4096}) {
    const SimContext on = deepseek("h200x8", true, "sglang"), off = deepseek("h200x8", false, "sglang");
    Breakdown a, c;
    evaluate(on, test_support::plan(8, b), &a);
    evaluate(off, test_support::plan(8, b), &c);
    // the tables add the measured elementwise ops (rope, act), which hold no collective
    std::size_t j = 0;
    for (const auto& op : a.ops) {
      if (j < c.ops.size() && c.ops[j].op == op.op && c.ops[j].layer_class == op.layer_class) {
        EXPECT_LE(op.comm_s, c.ops[j].comm_s * (1 + 1e-12)) << op.op << " batch " << b;
        ++j;
      } else {
        EXPECT_EQ(op.comm_s, 0.0) << op.op << " batch " << b;
      }
    }
    EXPECT_EQ(j, c.ops.size()) << "every op of the model is in the tables' step, in order";
  }
}

TEST(AllReduceTable, AFolderOfOnesOwnRowsReplacesTheGroupsItMeasuresAndMakesAGpuMeasured) {
  const auto dir = std::filesystem::temp_directory_path() / "shardwise_allreduce_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // 8 H100s at two sizes (twice the built-in times) and a B200 group of 8 (no built-in rows)
  std::ofstream(dir / "allreduce.csv") << "silicon,collective,kernel,group,bytes,value,unit,source_locator\n"
                                       << "h100,all_reduce,engine custom all-reduce (mine),8,32768,15.6,us,my lab\n"
                                       << "h100,all_reduce,engine custom all-reduce (mine),8,262144,33.4,us,my lab\n"
                                       << "b200,all_reduce,engine custom all-reduce (mine),8,65536,9,us,my lab\n";
  auto t = load_silicon_dir(dir.string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  const auto h100 = custom_allreduce_profile_for(*find_gpu("h100"), *t);
  ASSERT_NE(h100.of(8), nullptr);
  EXPECT_EQ(h100.of(8)->rows, 2);  // the folder's two rows in place of the built-in six
  // 114,688 B: 15.6 x (33.4 / 15.6)^(ln 3.5 / ln 8) = 15.6 x 2.14103^0.60246 = 24.68 us
  EXPECT_NEAR(h100.of(8)->seconds_at(114'688) * 1e6, 15.6 * std::pow(33.4 / 15.6, std::log(3.5) / std::log(8.0)), 1e-9);
  EXPECT_NEAR(h100.of(8)->seconds_at(114'688) * 1e6, 24.68, 0.01);
  EXPECT_EQ(h100.of(4)->rows, 6);  // a group size the folder does not measure stays built in
  EXPECT_NE(h100.of(8)->source.find(dir.string()), std::string::npos) << h100.of(8)->source;
  EXPECT_EQ(h100.of(4)->source.find(dir.string()), std::string::npos) << h100.of(4)->source;  // built in, said so
  const auto b200 = custom_allreduce_profile_for(*find_gpu("b200"), *t);
  ASSERT_TRUE(b200.present);
  EXPECT_EQ(b200.of(8)->basis, Basis::kMeasured);
  EXPECT_DOUBLE_EQ(b200.of(8)->link_bw, find_gpu("b200")->nvlink_bandwidth.value());
  EXPECT_EQ(b200.of(4), nullptr);
  EXPECT_NEAR(b200.of(8)->seconds_at(65'536), 9e-6, 1e-15);
  EXPECT_FALSE(custom_allreduce_profile_for(*find_gpu("b200")).present);  // built in: no B200 rows
  // rows of another kernel replace only that kernel's rows: the engine curve stays
  std::ofstream(dir / "allreduce.csv") << "silicon,collective,kernel,group,bytes,value,unit,source_locator\n"
                                       << "h100,all_reduce,vllm ca_1stage (not the engine label),8,32768,4,us,my lab\n";
  auto other = load_silicon_dir(dir.string());
  ASSERT_TRUE(other.ok()) << other.error().message();
  ASSERT_NE(custom_allreduce_profile_for(*find_gpu("h100"), *other).of(8), nullptr);
  EXPECT_EQ(custom_allreduce_profile_for(*find_gpu("h100"), *other).of(8)->rows, 6);
  // H200 rows of 8 GPUs: its own curve there (measured), the H100's carried at 2 and 4
  std::ofstream(dir / "allreduce.csv") << "silicon,collective,kernel,group,bytes,value,unit,source_locator\n"
                                       << "h200,all_reduce,engine custom all-reduce (mine),8,65536,8,us,my lab\n";
  auto h200dir = load_silicon_dir(dir.string());
  ASSERT_TRUE(h200dir.ok());
  const auto h200 = custom_allreduce_profile_for(*find_gpu("h200"), *h200dir);
  EXPECT_EQ(h200.of(8)->basis, Basis::kMeasured);
  EXPECT_EQ(h200.of(4)->basis, Basis::kTransferred);
  EXPECT_EQ(h200.of(2)->rows, 6);
  // an H800 is its own GPU here (its NVLink is not the H100's): a row naming one is refused
  // where the catalog has no h800, never read as the H100's
  std::ofstream(dir / "allreduce.csv") << "silicon,collective,kernel,group,bytes,value,unit,source_locator\n"
                                       << "h800,all_reduce,engine custom all-reduce,8,32768,7,us,x\n";
  auto h800 = load_silicon_dir(dir.string());
  if (!find_gpu("h800")) {
    ASSERT_FALSE(h800.ok());
    EXPECT_NE(h800.error().message().find("row 2 silicon"), std::string::npos) << h800.error().message();
  } else {
    ASSERT_TRUE(h800.ok());
    EXPECT_EQ(custom_allreduce_profile_for(*find_gpu("h100"), *h800).of(8)->rows, 6);
  }
  // a bad row names the file, the row and the value
  std::ofstream(dir / "allreduce.csv") << "silicon,collective,kernel,group,bytes,value,unit,source_locator\n"
                                       << "h100,all_reduce,engine custom all-reduce,8,32768,fast,us,x\n";
  auto bad = load_silicon_dir(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("allreduce.csv"), std::string::npos);
  EXPECT_NE(bad.error().message().find("'fast'"), std::string::npos) << bad.error().message();
  std::filesystem::remove_all(dir);
}

TEST(NcclAllReduce, AFolderOfOnesOwnNcclRowsReplacesTheBuiltInCurveAndExplainSaysSo) {
  const auto dir = std::filesystem::temp_directory_path() / "shardwise_nccl_allreduce_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // 8 B200s at two sizes: 100 us at 16 MiB, 400 us at 64 MiB (not the built-in curve)
  std::ofstream(dir / "allreduce.csv") << "silicon,collective,kernel,group,bytes,value,unit,source_locator\n"
                                       << "b200,all_reduce,NCCL all-reduce (mine),8,16777216,100,us,my lab\n"
                                       << "b200,all_reduce,NCCL all-reduce (mine),8,67108864,400,us,my lab\n";
  auto t = load_silicon_dir(dir.string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  const auto b200 = nccl_allreduce_profile_for(*find_gpu("b200"), *t);
  ASSERT_NE(b200.of(8), nullptr);
  EXPECT_EQ(b200.of(8)->rows, 2);  // the folder's rows in place of the built-in 16
  EXPECT_EQ(b200.of(8)->basis, Basis::kMeasured);
  // 32 MiB: log-log between them, 100 x 4^(ln 2 / ln 4) = 200 us
  EXPECT_NEAR(b200.of(8)->seconds_at(33'554'432) * 1e6, 200.0, 1e-6);
  EXPECT_EQ(b200.of(8)->source.rfind(dir.string() + "/allreduce.csv: b200 NCCL all-reduce, 8 GPUs", 0), 0U) << b200.of(8)->source;
  // a group size carried from the folder's rows, and a GB200 taking them, name the folder too
  EXPECT_EQ(b200.of(4)->source.rfind(dir.string(), 0), 0U) << b200.of(4)->source;
  const auto gb200 = nccl_allreduce_profile_for(*find_gpu("gb200"), *t);
  ASSERT_NE(gb200.of(8), nullptr);
  EXPECT_EQ(gb200.of(8)->basis, Basis::kTransferred);
  EXPECT_EQ(gb200.of(8)->source.rfind(dir.string(), 0), 0U) << gb200.of(8)->source;
  // without the folder: the built-in table, named as such
  EXPECT_EQ(nccl_allreduce_profile_for(*find_gpu("b200")).of(8)->source.rfind("data/silicon/allreduce.csv: b200 NCCL", 0), 0U);
  // the folder's NCCL rows leave the engines' custom curves alone (the H100's six rows stay)
  EXPECT_EQ(custom_allreduce_profile_for(*find_gpu("h100"), *t).of(8)->rows, 6);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shardwise
