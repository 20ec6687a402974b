// The kernel tables (cost/silicon, docs/silicon.md): parsing with exact messages, the
// share-of-roofline curve and its log-space interpolation, the transfer between GPUs by the
// measured ceilings, and the GEMM cost that uses them. Arithmetic in the comments.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "core/embedded_data.hpp"
#include "cost/engine.hpp"
#include "cost/silicon.hpp"
#include "cost/simulator.hpp"
#include "hardware/gpu.hpp"
#include "report/simulate.hpp"
#include "support/sim_context.hpp"

namespace shardwise {
namespace {

const char* kHeader = "silicon,dtype,kernel,M,N,K,value,unit,source_locator\n";

TEST(Silicon, ParsesTimesAndThroughputsIntoSeconds) {
  const std::string t = std::string(kHeader) + "h800,fp8,DeepGEMM,64,2112,7168,206.0,TFLOPS,\"repo@abc:README.md#L19, v3\"\n" +
                        "h100,bf16,cuBLAS,1,1000,1000,0.004,ms,vidur\n";
  auto rows = parse_gemm_table(t, "g.csv");
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 2u);
  // 2 x 64 x 2112 x 7168 = 1,937,768,448 FLOPs at 206e12 FLOP/s = 9.4066e-6 s
  EXPECT_NEAR((*rows)[0].seconds, 1937768448.0 / 206e12, 1e-15);
  EXPECT_EQ((*rows)[0].locator, "repo@abc:README.md#L19, v3");  // a quoted comma kept
  EXPECT_DOUBLE_EQ((*rows)[1].seconds, 4e-6);
}

TEST(Silicon, RefusesABadTableNamingTheRowAndValue) {
  auto bad_header = parse_gemm_table("silicon,dtype\nh100,bf16\n", "g.csv");
  ASSERT_FALSE(bad_header.ok());
  EXPECT_NE(bad_header.error().message().find("line 1"), std::string::npos);
  auto bad_value = parse_gemm_table(std::string(kHeader) + "h100,bf16,k,1,2,3,-1,ms,x\n", "g.csv");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.error().message().find("row 2 value"), std::string::npos) << bad_value.error().message();
  EXPECT_NE(bad_value.error().message().find("'-1'"), std::string::npos);
  auto bad_unit = parse_gemm_table(std::string(kHeader) + "h100,bf16,k,1,2,3,1,hours,x\n", "g.csv");
  ASSERT_FALSE(bad_unit.ok());
  EXPECT_NE(bad_unit.error().message().find("ms, us or TFLOPS"), std::string::npos);
  auto short_row = parse_gemm_table(std::string(kHeader) + "h100,bf16,k,1,2\n", "g.csv");
  EXPECT_FALSE(short_row.ok());
  auto over = parse_ceiling_table("gpu,dtype,percent_of_spec,M,N,K,source_locator\nh100,bf16,120,1,1,1,x\n", "c.csv");
  EXPECT_FALSE(over.ok());
}

TEST(Silicon, CurveIsTheMedianShareInterpolatedInLogRows) {
  // peak 1e15 FLOP/s, HBM 1e12 B/s, bf16 (2 B). Row M=1, N=K=1000: bytes 2 x (1,000 + 1e6) +
  // 2 x 1,000 = 2,004,000 B -> 2.004e-6 s (FLOPs 2e6 -> 2e-9 s): memory-bound. Measured
  // 4.008e-6 s -> share 0.5. Row M=4: bytes 2 x (4,000 + 1e6) + 8,000 = 2,016,000 -> 2.016e-6 s;
  // measured 2.52e-6 -> share 0.8.
  std::vector<GemmRow> rows{{"x", "bf16", "k", 1, 1000, 1000, 4.008e-6, ""}, {"x", "bf16", "k", 4, 1000, 1000, 2.52e-6, ""}};
  const GemmCurve c = build_gemm_curve(rows, 1e15, 1e12, 2.0, 0.0);
  ASSERT_EQ(c.n, 2);
  EXPECT_NEAR(c.share_at(1), 0.5, 1e-12);
  EXPECT_NEAR(c.share_at(4), 0.8, 1e-12);
  // M = 2 is half-way in log between 1 and 4: 0.5 + 0.5 x 0.3 = 0.65
  EXPECT_NEAR(c.share_at(2), 0.65, 1e-12);
  // outside the measured range: the nearest measured share
  EXPECT_NEAR(c.share_at(0.25), 0.5, 1e-12);
  EXPECT_NEAR(c.share_at(4096), 0.8, 1e-12);
  EXPECT_TRUE(c.in_range(3));
  EXPECT_FALSE(c.in_range(8));
  // a floor of 1e-6 s: share 2.004e-6 / 3.008e-6 = 0.66622
  const GemmCurve f = build_gemm_curve(rows, 1e15, 1e12, 2.0, 1e-6);
  EXPECT_NEAR(f.share_at(1), 2.004 / 3.008, 1e-9);
  // the floor those rows measure: min(4.008 - 2.004, 2.52 - 2.016) us = 0.504 us
  EXPECT_NEAR(gemm_floor(rows, 1e15, 1e12, 2.0), 0.504e-6, 1e-15);
}

TEST(Silicon, ProfilesTransferByTheMeasuredCeilings) {
  const GemmProfile h100 = gemm_profile_for("h100");
  ASSERT_TRUE(h100.present);
  EXPECT_EQ(h100.bf16.basis, Basis::kMeasured);
  EXPECT_EQ(h100.fp8.basis, Basis::kMeasured);  // its own rows (bench/silicon) beside H800's DeepGEMM rows
  EXPECT_EQ(h100.grouped_bf16.basis, Basis::kMeasured);
  EXPECT_EQ(h100.grouped_fp8.basis, Basis::kMeasured);
  EXPECT_EQ(h100.grouped_fp4.basis, Basis::kExtrapolated);
  EXPECT_EQ(gemm_profile_for("h200").grouped_fp8.basis, Basis::kMeasured);  // its own rows (bench/silicon on a lent H200)
  EXPECT_EQ(gemm_profile_for("h20").grouped_fp8.basis, Basis::kTransferred);  // the H100 die's
  // own rows keep the ratio that carries the fitted model: the H200's share of spec over the
  // H100's at the 144 shapes both measure at 512 rows and above (median 1.0193; its best-shape
  // ceilings say 73.4% / 70.9% = 1.0353)
  EXPECT_DOUBLE_EQ(gemm_profile_for("h200").fp8.ratio, 1.0);
  EXPECT_NEAR(gemm_profile_for("h200").fp8.ceiling_ratio, 1.0193, 1e-4);
  EXPECT_EQ(h100.fp4.basis, Basis::kExtrapolated);
  EXPECT_DOUBLE_EQ(h100.bf16.ratio, 1.0);
  // the floor measured by the table: no GEMM of it takes less than 4 us (vidur's min over
  // its profiling steps), and the one closest to the floor has a roofline of about 1.4 us
  EXPECT_GT(h100.floor_s, 2.5e-6);
  EXPECT_LT(h100.floor_s, 4e-6);
  // MI300X: best-shape bf16 51.4% of spec against H100's 80.3% -> 0.6401
  const GemmProfile mi = gemm_profile_for("mi300x");
  EXPECT_NEAR(mi.bf16.ratio, 51.4 / 80.3, 1e-9);
  EXPECT_EQ(mi.bf16.basis, Basis::kTransferred);
  EXPECT_EQ(mi.fp8.basis, Basis::kExtrapolated);  // no fp8 ceiling measured on MI300X: its bf16 ratio
  EXPECT_NEAR(mi.fp8.ratio, 51.4 / 80.3, 1e-9);
  // B200 fp8: its share at the engines' shapes over the H100's (0.8489: below), not its
  // best-shape 76.3% against H100's 70.9% (1.0762)
  EXPECT_NEAR(gemm_profile_for("b200").fp8.ratio, 0.84888, 1e-4);
  // GB300 has no row of its own: B300's best-shape ceiling (the same Blackwell Ultra die) over
  // the B200's, times the B200's share at the engines' shapes (below)
  EXPECT_NEAR(gemm_profile_for("gb300").bf16.ratio, gemm_profile_for("b200").bf16.ratio * 78.6 / 77.6, 1e-9);
  EXPECT_FALSE(gemm_profile_for("no-such-gpu").present);
}

TEST(Silicon, Fp4GemmsFromTheBlackwellRows) {
  // the B200's own fp4 rows (DeepGEMM PR 348, FlashInfer PR 1979 / issue 1732: data/silicon/
  // published/fp4_gemm.csv): measured; its fp4 ceiling 63.4% (5,702 of 9,000 TFLOP/s at
  // 8192^3) over its fp8 ceiling 76.3%, times fp8's share ratio at the engines' shapes
  // (0.84888), carries the fitted model: 0.83093 x 0.84888 = 0.70536 (was 63.4 / 70.9 = 0.8942)
  const GemmProfile b200 = gemm_profile_for("b200");
  EXPECT_EQ(b200.fp4.basis, Basis::kMeasured);
  EXPECT_GT(b200.fp4.curve.n, 3);
  EXPECT_NEAR(b200.fp4.ceiling_ratio, 63.4 / 76.3 * b200.fp8.ceiling_ratio, 1e-9);
  EXPECT_NEAR(b200.fp4.ceiling_ratio, 0.70536, 1e-4);
  EXPECT_DOUBLE_EQ(b200.fp4.ratio, 1.0);
  // the GB200 is the B200's die: transferred, scaled by the two chips' fp8 ceilings
  // (72.3 / 76.3 = 0.94758), as no fp4 ceiling of its own is measured
  const GemmProfile gb200 = gemm_profile_for("gb200");
  EXPECT_EQ(gb200.fp4.basis, Basis::kTransferred);
  EXPECT_NEAR(gb200.fp4.ratio, 72.3 / 76.3, 1e-9);
  // B300 has another fp4 unit: the B200's shares at its peak, extrapolated (fp8 74.5 / 76.3)
  const GemmProfile b300 = gemm_profile_for("b300");
  EXPECT_EQ(b300.fp4.basis, Basis::kExtrapolated);
  EXPECT_NEAR(b300.fp4.ratio, 74.5 / 76.3, 1e-9);
  // a GPU without fp4 rows keeps fp8's curve, extrapolated
  EXPECT_EQ(gemm_profile_for("h100").fp4.basis, Basis::kExtrapolated);
  EXPECT_EQ(gemm_profile_for("mi300x").fp4.basis, Basis::kExtrapolated);
  // the memory-bound row: FlashInfer's cutlass fp4 GEMM at M = 1, 8192 x 8192 in 18.85 us
  // reads 8192^2 x 0.5625 B = 37.7 MB, 2.0 TB/s of the B200's 8 TB/s: a share near 0.25
  EXPECT_LT(b200.fp4.curve.share_at(1), 0.5);
}

TEST(Silicon, TheCurveExplainsItsOwnTable) {
  // the claim of docs/silicon.md: floor + roofline / share(M) reproduces vidur's H100 GEMM
  // rows with a median error under 10% and a p90 under 25% (a re-fit to the rows it is built
  // from: a bound on the model's form, not a validation)
  std::string text;
  for (const auto& f : embedded_silicon()) {
    if (std::string(f.name) == "gemm") text = f.text;
  }
  auto rows = parse_gemm_table(text, "data/silicon/gemm.csv");
  ASSERT_TRUE(rows.ok());
  const GemmProfile p = gemm_profile_for("h100");
  const auto h100 = find_gpu("h100");
  ASSERT_TRUE(h100.has_value());
  const double peak = h100->bf16.value(), hbm = h100->hbm_bandwidth.value();
  std::vector<double> err;
  for (const auto& r : *rows) {
    if (r.silicon != "h100" || r.dtype != "bf16") continue;
    const double roof = std::max(2 * r.m * r.n * r.k / peak, 2 * (r.m * r.k + r.n * r.k + r.m * r.n) / hbm);
    const double t = p.floor_s + roof / p.bf16.curve.share_at(r.m);
    EXPECT_GT(t, roof);  // never faster than the roofline
    err.push_back(std::abs(t / r.seconds - 1.0));
  }
  ASSERT_GT(err.size(), 1000u);
  std::sort(err.begin(), err.end());
  EXPECT_LT(err[err.size() / 2], 0.10);
  EXPECT_LT(err[err.size() * 9 / 10], 0.25);
}

TEST(Silicon, GemmOpsCarryTheirBasisAndMoreBandwidthIsNeverSlower) {
  using namespace test_support;
  auto m = load_model("llama-3.1-8b");
  auto c = cluster_from_preset("h100x8");
  ASSERT_TRUE(m.ok() && c.ok());
  CostParams p = cost_params_for("h100");
  p.kernel_tables = true;
  const SimContext ctx = make_context(*m, *c, decode(1000), p);
  ASSERT_TRUE(ctx.params.gemm.present);
  const Breakdown bd = breakdown_step(ctx, plan(1, 8), Phase::kDecode, 8, 1000);
  bool saw = false;
  for (const auto& o : bd.ops) {
    if (o.op == "ffn1") {
      saw = true;
      EXPECT_EQ(o.basis, Basis::kMeasured) << o.table;
      EXPECT_NE(o.table.find("vidur"), std::string::npos);
      EXPECT_STREQ(o.bound, "memory");  // 8 rows: weight streaming
    }
  }
  EXPECT_TRUE(saw);
  // the tables off: the analytic model, no basis
  CostParams off = cost_params_for("h100");
  const SimContext plain = make_context(*m, *c, decode(1000), off);
  EXPECT_FALSE(plain.params.gemm.present);
  // more HBM bandwidth is never slower, tables on
  auto fast = *c;
  fast.gpu.hbm_bandwidth = BytesPerSecond(fast.gpu.hbm_bandwidth.value() * 1.5);
  const SimContext ctx_fast = make_context(*m, fast, decode(1000), p);
  for (std::int64_t b : {1, 8, 64, 512}) {
    const StepTime slow_t = step_time(ctx, plan(1, b), Phase::kDecode, b, 1000, 1000);
    const StepTime fast_t = step_time(ctx_fast, plan(1, b), Phase::kDecode, b, 1000, 1000);
    EXPECT_LE(fast_t.stage_s, slow_t.stage_s * (1 + 1e-12)) << b;
  }
}

const char* kGroupedHeader = "silicon,dtype,kernel,layout,groups,m_per_group,m_padded,N,K,value,unit,source_locator\n";

TEST(Silicon, GroupedRowsParseAndBuildTheirCurve) {
  // DeepGEMM masked: 4 groups x 256 rows x 4096 x 7168 at 932 TFLOPS:
  // 2 x 4 x 256 x 4096 x 7168 = 60.13 GFLOP -> 60.13e9 / 932e12 = 64.52 us
  const std::string t = std::string(kGroupedHeader) + "h800,fp8,DeepGEMM,masked,4,256,256,4096,7168,932,TFLOPS,x\n" +
                        "h100,bf16,torch,contiguous,2,1,8,1000,1000,8.016,us,y\n";
  auto rows = parse_grouped_table(t, "g.csv");
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_NEAR((*rows)[0].seconds, 2.0 * 4 * 256 * 4096 * 7168 / 932e12, 1e-15);
  EXPECT_DOUBLE_EQ((*rows)[1].m_padded, 8);
  // the second row on a GPU of 1e15 FLOP/s and 1e12 B/s, bf16: it reads 2 x 2 x (1 x 1000 +
  // 1000 x 1000) + 2 x 2 x 1 x 1000 = 4,008,000 B -> 4.008 us; 4e-9 s of compute; it took
  // 8.016 us -> share 0.5
  const std::vector<GroupedRow> one{(*rows)[1]};
  const GemmCurve c = build_grouped_curve(one, 1e15, 1e12, 2.0, 0.0);
  ASSERT_EQ(c.n, 1);
  EXPECT_NEAR(c.share_at(1), 0.5, 1e-12);
  // a floor of 4.008 us leaves 4.008 us for the roofline: share 1
  EXPECT_NEAR(build_grouped_curve(one, 1e15, 1e12, 2.0, 4.008e-6).share_at(1), 1.0, 1e-9);
  // errors name the file, the row and the value
  auto pad = parse_grouped_table(std::string(kGroupedHeader) + "h100,bf16,k,c,2,16,8,10,10,1,us,x\n", "g.csv");
  ASSERT_FALSE(pad.ok());
  EXPECT_EQ(pad.error().message(), "g.csv: field 'row 2 m_padded': expected at least m_per_group, found '8'");
  auto unit = parse_grouped_table(std::string(kGroupedHeader) + "h100,bf16,k,c,2,1,8,10,10,1,s,x\n", "g.csv");
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.error().message(), "g.csv: field 'row 2 unit': expected ms, us or TFLOPS, found 's'");
}

// A folder of one's own measurements for --silicon, removed at the end of the test.
struct SiliconDir {
  std::filesystem::path path;
  explicit SiliconDir(const std::string& name) : path(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~SiliconDir() { std::filesystem::remove_all(path); }
  void write(const char* file, const std::string& text) const { std::ofstream(path / file) << text; }
};

TEST(Silicon, AFolderOfOnesOwnRowsReplacesTheBuiltInRowsItMeasures) {
  using namespace test_support;
  SiliconDir d("shardwise_silicon_test_ok");
  // one grouped bf16 row on H100: 32 experts x 4096 x 7168 bf16 = 1.879 GB at 1 row each;
  // 700 us -> 2.68 TB/s of 3.35 (the catalog's H100): share 0.80 beyond the floor
  d.write("grouped_gemm.csv", std::string(kGroupedHeader) + "h100,bf16,mine,contiguous,32,1,8,4096,7168,700,us,my lab\n");
  auto t = load_silicon_dir(d.path.string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  const GemmProfile mine = gemm_profile_for("h100", *t), builtin = gemm_profile_for("h100");
  EXPECT_EQ(mine.grouped_bf16.curve.rows, 1);  // the built-in H100 bf16 grouped rows are replaced
  EXPECT_EQ(mine.grouped_bf16.basis, Basis::kMeasured);
  EXPECT_NE(mine.grouped_bf16.source.find(d.path.string()), std::string::npos) << mine.grouped_bf16.source;
  EXPECT_GT(builtin.grouped_bf16.curve.rows, 1);
  EXPECT_EQ(mine.grouped_fp8, builtin.grouped_fp8);  // a format the folder does not measure stays built in
  EXPECT_EQ(mine.bf16, builtin.bf16);
  // its rows price the experts: an H100 CostParams with the folder gives another expert GEMM time
  auto m = load_model("qwen3-30b-a3b");
  auto c = cluster_from_preset("h100x8");
  ASSERT_TRUE(m.ok() && c.ok());
  CostParams p = cost_params_for("h100");
  p.kernel_tables = true;
  CostParams q = p;
  q.silicon = std::make_shared<const SiliconTables>(std::move(t).value());
  const SimContext a = make_context(*m, *c, decode(1000), p);
  const SimContext b = make_context(*m, *c, decode(1000), q);
  EXPECT_NE(a.params.gemm.grouped_bf16, b.params.gemm.grouped_bf16);
}

// The built-in H100's fastest time (us) at m x 4096 x 4096 in `dtype`: what a share ratio reads.
double h100_fastest_us(const char* dtype, double m) {
  std::vector<double> v;
  for (const GemmRow& r : builtin_silicon().gemm) {
    if (r.silicon == "h100" && r.dtype == dtype && r.m == m && r.n == 4096 && r.k == 4096) v.push_back(r.seconds * 1e6);
  }
  EXPECT_FALSE(v.empty()) << dtype << " at " << m;
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

// A --silicon folder holding `gpu`'s `dtype` GEMMs at 512, 1024 and 2048 x 4096 x 4096, each
// taking the built-in H100's fastest time there x (H100 peak / its peak) / share: every shape's
// share ratio is `share` exactly. Loaded with the built-in tables.
Expected<SiliconTables> folder_at_share(const SiliconDir& d, const std::string& gpu, const char* dtype, double share) {
  const bool fp8 = std::string(dtype) == "fp8";
  const double scale = (fp8 ? find_gpu("h100")->fp8.value() / find_gpu(gpu)->fp8.value() : find_gpu("h100")->bf16.value() / find_gpu(gpu)->bf16.value()) / share;
  std::string rows = kHeader;
  for (double m : {512.0, 1024.0, 2048.0}) rows += fmt::format("{},{},mine,{},4096,4096,{:.9f},us,my lab\n", gpu, dtype, m, h100_fastest_us(dtype, m) * scale);
  d.write("gemm.csv", rows);
  return load_silicon_dir(d.path.string());
}

TEST(Silicon, AFoldersOwnB200RowsCarryItInPlaceOfThePublishedOnes) {
  // a B200 measured with bench/silicon at three of the H100's fp8 shapes (512 / 1024 / 2048 x
  // 4096 x 4096), each row taking the H100's fastest time there x (1978.9 / 4500) / 0.95: every
  // shape's share ratio, (H100 s / B200 s) x (1978.9 / 4500), is 0.95, so the median is 0.95;
  // the folder's rows carry the B200's fp8 and its built-in carry rows of fp8 no longer count
  SiliconDir d("shardwise_silicon_test_b200");
  auto t = folder_at_share(d, "b200", "fp8", 0.95);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_TRUE(std::none_of(t->carry.begin(), t->carry.end(), [](const GemmRow& r) { return r.silicon == "b200" && r.dtype == "fp8"; }));
  EXPECT_TRUE(std::any_of(t->carry.begin(), t->carry.end(), [](const GemmRow& r) { return r.silicon == "b200" && r.dtype == "bf16"; }));
  EXPECT_NEAR(gemm_profile_for("b200", *t).fp8.ceiling_ratio, 0.95, 1e-6);
  EXPECT_NEAR(gemm_profile_for("b200", *t).bf16.ceiling_ratio, gemm_profile_for("b200").bf16.ceiling_ratio, 1e-12);
}

TEST(Silicon, AFoldersRowsOfARenamedGpuCarryIt) {
  // an H20 (which reads the H100 die's ceilings) measured at three of the H100's bf16 shapes,
  // each at the H100's fastest time x (989.4 / 148) / 0.5: its own share ratio, 0.5, carries it
  // (not the die's 1), and its fp8, unmeasured, takes bf16's share
  SiliconDir d("shardwise_silicon_test_h20");
  auto t = folder_at_share(d, "h20", "bf16", 0.5);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_NEAR(gemm_profile_for("h20", *t).bf16.ceiling_ratio, 0.5, 1e-6);
  EXPECT_NEAR(gemm_profile_for("h20", *t).fp8.ceiling_ratio, 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(gemm_profile_for("h20").bf16.ceiling_ratio, 1.0);  // built in: the H100 die's
  // a folder's own H100 rows replace the H100's curves, not the reference: the B200 keeps its shares
  SiliconDir h("shardwise_silicon_test_h100ref");
  h.write("gemm.csv", std::string(kHeader) + "h100,fp8,mine,8192,8192,8192,500,us,my lab\n");
  auto u = load_silicon_dir(h.path.string());
  ASSERT_TRUE(u.ok()) << u.error().message();
  EXPECT_NEAR(gemm_profile_for("b200", *u).fp8.ceiling_ratio, gemm_profile_for("b200").fp8.ceiling_ratio, 1e-12);
}

TEST(Silicon, AFolderThatIsNotOneIsRefusedWithTheFlag) {
  auto missing = load_silicon_dir("/no/such/folder");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(), "--silicon: expected a folder of kernel tables (bench/silicon/measure.py --out), found '/no/such/folder'");
  SiliconDir empty("shardwise_silicon_test_empty");
  auto none = load_silicon_dir(empty.path.string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("a folder holding gemm.csv, grouped_gemm.csv, fused_moe.csv, gemm_ceiling.csv, allreduce.csv, elementwise.csv, mla_decode.csv, attention.csv, attention_prefill.csv or moe_comm.csv"), std::string::npos);
  SiliconDir bad("shardwise_silicon_test_bad");
  bad.write("gemm.csv", std::string(kHeader) + "h100,bf16,k,1,2,3,1,us,x\nquantum9000,bf16,k,1,2,3,1,us,x\n");
  auto gpu = load_silicon_dir(bad.path.string());
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error().message(), (bad.path / "gemm.csv").string() +
                                       ": field 'row 3 silicon': expected a GPU of the catalog (shardwise clusters), found 'quantum9000'");
  bad.write("gemm.csv", std::string(kHeader) + "h100,bf16,k,1,2,3,zero,us,x\n");
  auto num = load_silicon_dir(bad.path.string());
  ASSERT_FALSE(num.ok());
  EXPECT_NE(num.error().message().find("row 2 value"), std::string::npos) << num.error().message();
}

// Llama-3.1-8B-style decode at context 1,000 on a cluster preset, priced by its GPU's shipped fit
SimContext fitted_decode_ctx(const ModelSpec& m, const std::string& cluster) {
  auto c = cluster_from_preset(cluster);
  EXPECT_TRUE(c.ok()) << cluster;
  return make_context(m, *c, test_support::decode(1000), cost_params_for(c->gpu.name));
}

TEST(Silicon, TheFittedModelCarriesTheMeasuredCeilings) {
  using namespace test_support;
  auto m = load_model("llama-3.1-8b");
  ASSERT_TRUE(m.ok());
  const auto ctx_on = [&](const std::string& cluster) { return fitted_decode_ctx(*m, cluster); };
  // H100 on the H100 fit: itself
  EXPECT_DOUBLE_EQ(ctx_on("h100x8").ceiling_bf16, 1.0);
  EXPECT_DOUBLE_EQ(ctx_on("h100x8").ceiling_fp8, 1.0);
  // MI300X borrows the Hopper fit: its GEMMs reach 51.4% of spec, H100's 80.3% -> 0.6401
  const SimContext mi = ctx_on("mi300xx8");
  EXPECT_NEAR(mi.ceiling_bf16, 51.4 / 80.3, 1e-9);
  // GB200 on the B200 fit: 72.9% / 77.6% = 0.9394 (bf16), 72.3% / 76.3% = 0.9476 (fp8)
  EXPECT_NEAR(ctx_on("gb200x72").ceiling_bf16, 72.9 / 77.6, 1e-9);
  EXPECT_NEAR(ctx_on("gb200x72").ceiling_fp8, 72.3 / 76.3, 1e-9);
  // H200 on the H100 fit: its shares at the shapes both measure (fp8 1.0193, bf16 0.9863)
  EXPECT_NEAR(ctx_on("h200x8").ceiling_fp8, 1.0193, 1e-4);
  EXPECT_NEAR(ctx_on("h200x8").ceiling_bf16, 0.9863, 1e-4);
  // B200 on the H100 fit (leave-generation-out): fp8 0.8489 / 1, not its best-shape 1.0762
  {
    auto c = cluster_from_preset("b200x8");
    ASSERT_TRUE(c.ok());
    const SimContext lgo = make_context(*m, *c, decode(1000), cost_params_for("h100"));
    EXPECT_NEAR(lgo.ceiling_fp8, 0.84888, 1e-4);
    // fp4 on Hopper's fit: 63.4 / 76.3 x 0.84888 = 0.70536 (the best-shape rule said 63.4 / 70.9)
    EXPECT_NEAR(lgo.ceiling_fp4, 0.70536, 1e-4);
  }
  // fp4 against the fit silicon's fp8 ceiling: B200 on its own fit 63.4% / 76.3% = 0.8309;
  // GB200 (the B200's fp4 ceiling carried by the fp8 ones, 63.4 x 72.3 / 76.3) / 76.3 = 0.7874;
  // H100 (no fp4 ceiling: fp8's, 1)
  EXPECT_NEAR(ctx_on("b200x8").ceiling_fp4, 63.4 / 76.3, 1e-9);
  EXPECT_NEAR(ctx_on("gb200x72").ceiling_fp4, 63.4 * 72.3 / (76.3 * 76.3), 1e-9);
  EXPECT_DOUBLE_EQ(ctx_on("h100x8").ceiling_fp4, 1.0);
  // a compute-bound GEMM (a 4,096-token prefill, bf16) takes 1 / 0.6401 the time beyond its
  // fixed overhead: 2 x 4096 x params / (peak x 0.7 x c x 4096 / (4096 + 256))
  SimContext same = mi;
  same.ceiling_bf16 = 1.0;
  const Breakdown slow = breakdown_step(mi, plan(1, 1), Phase::kPrefill, 1, 4096);
  const Breakdown fast = breakdown_step(same, plan(1, 1), Phase::kPrefill, 1, 4096);
  const double oh = mi.params.kernel_overhead_us * 1e-6;
  bool saw = false;
  for (std::size_t i = 0; i < slow.ops.size(); ++i) {
    if (slow.ops[i].op != "ffn1") continue;
    saw = true;
    EXPECT_NEAR((slow.ops[i].compute_s - oh) / (fast.ops[i].compute_s - oh), 80.3 / 51.4, 1e-9);
  }
  EXPECT_TRUE(saw);
}

TEST(Silicon, SharesMeasuredAtTheEnginesShapesCarryTheFit) {
  // by hand: a B200 and an H100 at three fp8 shapes (and one the B200 alone measures, one
  // under 512 rows, one in bf16: none of them counts). Each shape's ratio is
  // (H100 seconds / B200 seconds) x (H100 fp8 peak / B200 fp8 peak), 1978.9 / 4500 = 0.439756,
  // each side's seconds the fastest of its rows there:
  //   512 x 4096 x 4096:  (20 / 10) x 0.439756 = 0.879511
  //   1024 x 4096 x 4096: H100 rows 36, 44 and 60 us (fastest 36; their median 44 would give
  //                       0.967463) / 20 -> 1.8 x 0.439756 = 0.791561
  //   2048 x 4096 x 4096: (80 / 50) x 0.439756 = 0.703609
  // median 0.791561
  const std::string t = std::string(kHeader) + "b200,fp8,k,512,4096,4096,10,us,x\n" + "h100,fp8,k,512,4096,4096,20,us,x\n" +
                        "b200,fp8,k,1024,4096,4096,20,us,x\n" + "h100,fp8,k,1024,4096,4096,60,us,x\n" + "h100,fp8,k,1024,4096,4096,36,us,x\n" +
                        "h100,fp8,k,1024,4096,4096,44,us,x\n" + "b200,fp8,k,2048,4096,4096,50,us,x\n" + "h100,fp8,k,2048,4096,4096,80,us,x\n" +
                        "b200,fp8,k,4096,4096,4096,90,us,x\n" + "b200,fp8,k,256,4096,4096,1,us,x\n" + "h100,fp8,k,256,4096,4096,9,us,x\n" +
                        "b200,bf16,k,512,4096,4096,1,us,x\n" + "h100,bf16,k,512,4096,4096,9,us,x\n" + "b200,bf16,k,1024,4096,4096,1,us,x\n" +
                        "h100,bf16,k,1024,4096,4096,9,us,x\n" + "h800,fp8,k,4096,4096,4096,45,us,x\n";
  auto rows = parse_gemm_table(t, "g.csv");
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  const double peaks = find_gpu("h100")->fp8.value() / find_gpu("b200")->fp8.value();
  EXPECT_NEAR(measured_share_ratio(*rows, "b200", "fp8"), 1.8 * peaks, 1e-12);
  EXPECT_NEAR(measured_share_ratio(*rows, "b200", "fp8"), 0.791561, 1e-6);
  // two bf16 shapes in common: fewer than kShareMinShapes (3), unmeasured; an H800 row at the
  // B200's 4096-row shape is not the H100's (another kernel): still three fp8 shapes above
  EXPECT_DOUBLE_EQ(measured_share_ratio(*rows, "b200", "bf16"), 0.0);
  EXPECT_DOUBLE_EQ(measured_share_ratio(*rows, "no-such-gpu", "fp8"), 0.0);
  EXPECT_DOUBLE_EQ(measured_share_ratio(*rows, "b200", "fp4"), 0.0);  // bf16 and fp8 only
  // the built-in rows: the B200's (data/silicon/gemm_carry.csv, vLLM's SM100 pull requests) at
  // Llama-3.1-8B's shapes against the H100's. fp8, five shapes, e.g. 512 x 6144 x 4096: the B200's
  // 1,795.57 TFLOP/s take 2 x 512 x 6144 x 4096 / 1795.57e12 = 14.352 us, the H100's 27.704 us:
  // 27.704 / 14.352 x 0.439756 = 0.84888, the median of 0.8174, 0.8358, 0.8489, 0.8710, 0.9589
  const SiliconTables& b = builtin_silicon();
  EXPECT_NEAR(measured_share_ratio([&] {
                std::vector<GemmRow> all = b.gemm;
                all.insert(all.end(), b.carry.begin(), b.carry.end());
                return all;
              }(),
                                   "b200", "fp8"),
              0.84888, 1e-4);
  const GemmProfile b200 = gemm_profile_for("b200");
  EXPECT_NEAR(b200.fp8.ceiling_ratio, 0.84888, 1e-4);
  // bf16: six shapes against the H100's fastest rows there (the project's torch rows, faster
  // than vidur's at the same shapes), the median of 0.7965, 0.8211, 0.8236, 0.8464, 0.8484,
  // 0.8613 = 0.83503 (against its best-shape 77.6 / 80.3 = 0.9664)
  EXPECT_NEAR(b200.bf16.ceiling_ratio, 0.83503, 1e-4);
  EXPECT_NE(b200.fp8.source.find("by the shares measured at the engines' shapes"), std::string::npos) << b200.fp8.source;
  // the B200's die siblings take its shares, carried by the two chips' best-shape ceilings:
  // GB200 fp8 0.84888 x 72.3 / 76.3, B300 x 74.5 / 76.3, GB300 as the B300
  EXPECT_NEAR(gemm_profile_for("gb200").fp8.ceiling_ratio, b200.fp8.ceiling_ratio * 72.3 / 76.3, 1e-9);
  EXPECT_NEAR(gemm_profile_for("gb200").bf16.ceiling_ratio, b200.bf16.ceiling_ratio * 72.9 / 77.6, 1e-9);
  EXPECT_NEAR(gemm_profile_for("b300").fp8.ceiling_ratio, b200.fp8.ceiling_ratio * 74.5 / 76.3, 1e-9);
  EXPECT_NEAR(gemm_profile_for("gb300").fp8.ceiling_ratio, gemm_profile_for("b300").fp8.ceiling_ratio, 1e-12);
  // GPUs measured at no shape the H100 has keep the best-shape rule: MI300X 51.4 / 80.3
  EXPECT_NEAR(gemm_profile_for("mi300x").bf16.ceiling_ratio, 51.4 / 80.3, 1e-9);
  // the H100 is the reference
  EXPECT_DOUBLE_EQ(gemm_profile_for("h100").fp8.ceiling_ratio, 1.0);
  // the shipped Blackwell fit carries Hopper's GEMM efficiency by that ratio (no Blackwell row
  // it fits is dense: data/calibration/b200.yaml): 0.70 x 0.84888 = 0.5942
  EXPECT_NEAR(cost_params_for("b200").gemm_efficiency, cost_params_for("h100").gemm_efficiency * b200.fp8.ceiling_ratio, 1e-4);
}

TEST(Silicon, TheFittedFewRowRampSpansThisGpusRidge) {
  using namespace test_support;
  auto m = load_model("llama-3.1-8b");
  ASSERT_TRUE(m.ok());
  const auto ctx_on = [&](const std::string& cluster) { return fitted_decode_ctx(*m, cluster); };
  // H100 on the H100 fit: bf16 989.4 x 2 B / 3.35 TB/s over itself = 1; fp8 1978.9 x 1 B x 1 / 3.35
  // over 989.4 x 2 / 3.35 = 1.0000 (the datasheet's fp8 is twice bf16 to 4 digits)
  const SimContext h100 = ctx_on("h100x8");
  EXPECT_DOUBLE_EQ(h100.half_rows_bf16, 1.0);
  EXPECT_NEAR(h100.half_rows_fp8, 1.0, 1e-3);
  // H200: the same compute, 4.8 TB/s: fp8 2 x 989.4 x 1.01929 (its share ratio) x 1 B / 4.8 over
  // 989.4 x 2 / 3.35 = 1.01929 x 3.35 / 4.8 = 0.71138
  const SimContext h200 = ctx_on("h200x8");
  EXPECT_NEAR(h200.half_rows_fp8, h200.cluster.gpu.fp8.value() / (2.0 * 989.4e12) * h200.ceiling_fp8 * 3.35 / 4.8, 1e-9);
  EXPECT_NEAR(h200.half_rows_fp8, 0.71138, 1e-3);
  // MI300X on the Hopper fit: bf16 1307.4 x (51.4 / 80.3) x 2 B / 5.3 over 989.4 x 2 / 3.35
  // = 1.3214 x 0.6401 x 0.6321 = 0.5347
  const SimContext mi = ctx_on("mi300xx8");
  EXPECT_NEAR(mi.half_rows_bf16, 0.5347, 1e-3);
  // B200 on its own fit: fp4 9,000 x (63.4 / 76.3) x 0.5 B over 2,250 x 2 = 0.8309 (the fp4
  // ceiling cancels in the ramp's time: below)
  const SimContext b200 = ctx_on("b200x8");
  EXPECT_NEAR(b200.half_rows_fp4, b200.ceiling_fp4 * b200.cluster.gpu.fp4.value() * 0.5 / (2.0 * b200.cluster.gpu.bf16.value()), 1e-9);
  // The property: at few rows the fitted GEMM's time per weight byte, gemm_half_rows x half x
  // 2 / (peak x gemm_efficiency x ceiling x bytes per weight), is the fitted silicon's bf16 one
  // times its bandwidth over this GPU's, on every GPU of the catalog and in every format it
  // computes in: a weight read, not a share of compute
  for (const GpuSpec& g : gpu_catalog()) {
    const SimContext c = ctx_on(g.name + "x1");
    const auto fit = find_gpu(c.params.gpu);
    ASSERT_TRUE(fit.has_value()) << g.name;
    const double ref = c.params.gemm_half_rows * 2.0 / (fit->bf16.value() * c.params.gemm_efficiency * 2.0);
    const struct {
      double peak, bytes, ceiling, half;
    } fmts[] = {{g.bf16.value(), 2.0, c.ceiling_bf16, c.half_rows_bf16},
                {g.fp8.value(), 1.0, c.ceiling_fp8, c.half_rows_fp8},
                {g.fp4.value(), 0.5, c.ceiling_fp4, c.half_rows_fp4}};
    for (const auto& f : fmts) {
      if (!(f.peak > 0)) continue;
      const double per_byte = c.params.gemm_half_rows * f.half * 2.0 / (f.peak * c.params.gemm_efficiency * f.ceiling * f.bytes);
      EXPECT_NEAR(per_byte / ref, fit->hbm_bandwidth.value() / g.hbm_bandwidth.value(), 1e-9) << g.name << " at " << f.bytes << " B";
    }
  }
  // gemm_time reads the span of the format it computes in: Llama-3.1-8B in fp8 at one row on the
  // H200, qkv_proj (4096 x 6144 = 25,165,824 weights): its compute is max(tc, tm) + the 8 us
  // floor, tc = 2 x 25,165,824 / (fp8 peak x 0.7 x ceiling_fp8 x 1 / (1 + 256 x half_rows_fp8))
  // = 50.33e6 / (1979e12 x 0.7 x 1.0193 / 183.11) = 6.5 us
  {
    Workload w8 = decode(1000);
    w8.weights_dtype = DType::kFp8;
    auto c = cluster_from_preset("h200x1");
    ASSERT_TRUE(c.ok());
    const SimContext x = make_context(*m, *c, w8, cost_params_for("h200"));
    const Breakdown bd = breakdown_step(x, plan(1, 1), Phase::kDecode, 1, 1000);
    bool seen = false;
    for (const OpCost& op : bd.ops) {
      if (op.op != "qkv_proj") continue;
      seen = true;
      const double weights = 4096.0 * 6144.0;
      const double eff = x.params.gemm_efficiency * x.ceiling_fp8 * 1.0 / (1.0 + x.params.gemm_half_rows * x.half_rows_fp8);
      const double tc = 2.0 * weights / (x.cluster.gpu.fp8.value() * eff);
      const double tm = op.hbm_bytes / (x.cluster.gpu.hbm_bandwidth.value() * x.params.mem_efficiency);
      EXPECT_NEAR(op.compute_s, (std::max(tc, tm) + x.params.kernel_overhead_us * 1e-6) * x.params.scales.gemm, 1e-12) << op.bound;
      // the ramp's time (6.5 us; 9.0 at the H100's span) above the weight read's (6.0 us): the check
      // sees the span (the floor's 8 us makes the op latency-bound all the same)
      EXPECT_GT(tc, tm);
    }
    EXPECT_TRUE(seen);
  }
  // a GPU the kernel tables do not profile (a cluster YAML's own name) is priced by the fitted
  // model even with --kernel-tables, at its own ridge: an H200 renamed, bf16 989.4 x 2 / 4.8 over
  // 989.4 x 2 / 3.35 = 0.6979 (no measured ceiling for the name: 1)
  {
    auto c = cluster_from_preset("h200x1");
    ASSERT_TRUE(c.ok());
    c->gpu.name = "mygpu";
    CostParams tp = cost_params_for("h200");
    tp.kernel_tables = true;
    const SimContext x = make_context(*m, *c, decode(1000), tp);
    EXPECT_FALSE(x.params.gemm.present);
    EXPECT_NEAR(x.half_rows_bf16, 3.35 / 4.8, 1e-9);
  }
  // a GPU whose fp4 peak equals its fp8 peak (a cluster YAML may say so): tensor_format reads
  // that peak as fp4, so its fp4 span is fp8's (its fp8 GEMMs keep their own span)
  {
    auto c = cluster_from_preset("b200x1");
    ASSERT_TRUE(c.ok());
    c->gpu.name = "samepeak";
    c->gpu.fp4 = c->gpu.fp8;
    const SimContext x = make_context(*m, *c, decode(1000), cost_params_for("b200"));
    EXPECT_DOUBLE_EQ(x.half_rows_fp4, x.half_rows_fp8);
    EXPECT_NEAR(x.half_rows_fp8, 1.0, 1e-9);  // 4,500 x 1 B / 8 over 2,250 x 2 / 8 on the B200 fit
  }
  // and so one-row GEMMs (bf16 here) run faster on the H200 than on the H100 (before, its ramp was the
  // H100's and its 43% more bandwidth bought nothing): Llama-3.1-8B's decode step at batch 1
  const double t100 = breakdown_step(h100, plan(1, 1), Phase::kDecode, 1, 1000).stage_s;
  const double t200 = breakdown_step(h200, plan(1, 1), Phase::kDecode, 1, 1000).stage_s;
  EXPECT_LT(t200, t100 * 0.9);
}

TEST(Silicon, ManyDistinctRowCountsAreBinnedAtHalfOctaves) {
  // 32 rows at 1.000-1.031 rows per expert (bin round(2 log2 m) = 0) and one at 4 (bin 4):
  // 33 distinct counts > the 32 points a curve holds, so two bins. One group, N = K = 1000,
  // bf16 on 1e15 FLOP/s and 1e12 B/s: a row reads 2 x (1000 m + 1e6) + 2 x 1000 m bytes; the
  // first 32 take twice that (share 0.5), the last 1.25 times (share 0.8).
  std::vector<GroupedRow> rows;
  const auto roof = [](double m) { return (2.0 * (1000 * m + 1e6) + 2.0 * 1000 * m) / 1e12; };
  for (int i = 0; i < 32; ++i) {
    const double m = 1.0 + 0.001 * i;
    rows.push_back({"x", "bf16", "k", "routed", 1, m, m, 1000, 1000, 2.0 * roof(m), ""});
  }
  rows.push_back({"x", "bf16", "k", "routed", 1, 4, 4, 1000, 1000, 1.25 * roof(4), ""});
  const GemmCurve c = build_grouped_curve(rows, 1e15, 1e12, 2.0, 0.0);
  ASSERT_EQ(c.n, 2);
  EXPECT_EQ(c.rows, 33);
  // the first bin at the geometric mean of 1.000..1.031: exp(mean ln m) ~ 1.0154
  double logs = 0;
  for (int i = 0; i < 32; ++i) logs += std::log(1.0 + 0.001 * i);
  EXPECT_NEAR(c.log_m[0], logs / 32, 1e-12);
  EXPECT_NEAR(c.share_at(1.0), 0.5, 1e-12);
  EXPECT_NEAR(c.share_at(4.0), 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(c.m_lo, 1.0);
  EXPECT_DOUBLE_EQ(c.m_hi, 4.0);
}

TEST(Silicon, TheEnginesFusedMoeHasItsOwnCurveAndStaysOnItsDie) {
  const SiliconTables& t = builtin_silicon();
  // the grouped curves leave the routed rows out: the H200's fp8 grouped curve counts its
  // non-routed rows only
  int h200_fp8_plain = 0, h200_fp8_routed = 0;
  for (const auto& r : t.grouped) {
    if (r.silicon == "h200" && r.dtype == "fp8") ++(r.layout == "routed" ? h200_fp8_routed : h200_fp8_plain);
  }
  ASSERT_GT(h200_fp8_routed, 0);
  const GemmProfile h200 = gemm_profile_for("h200");
  EXPECT_EQ(h200.grouped_fp8.curve.rows, h200_fp8_plain);
  EXPECT_GT(h200.routed_fp8.curve.n, 0);
  EXPECT_EQ(h200.routed_fp8.basis, Basis::kMeasured);
  EXPECT_NE(h200.routed_fp8.source.find("routed"), std::string::npos) << h200.routed_fp8.source;
  // the H20 (a Hopper die) borrows the H100's; a Blackwell die takes the H100's rows at its
  // measured share ratio, extrapolated (the same Triton kernel, never measured there); AMD's
  // engines run AITER's MoE: none
  EXPECT_EQ(gemm_profile_for("h20").routed_fp8.basis, Basis::kTransferred);
  const GemmProfile h100 = gemm_profile_for("h100");
  for (const char* g : {"b200", "gb200", "b300", "gb300"}) {
    const GemmProfile b = gemm_profile_for(g);
    ASSERT_GT(b.routed_fp8.curve.n, 0) << g;
    EXPECT_EQ(b.routed_fp8.basis, Basis::kExtrapolated) << g;
    EXPECT_EQ(b.routed_bf16.basis, Basis::kExtrapolated) << g;
    EXPECT_EQ(b.routed_fp8.curve.n, h100.routed_fp8.curve.n) << g;  // the H100's curve itself
    EXPECT_DOUBLE_EQ(b.routed_fp8.curve.share_at(8.0), h100.routed_fp8.curve.share_at(8.0)) << g;
    EXPECT_DOUBLE_EQ(b.routed_fp8.ratio, b.fp8.ceiling_ratio) << g;  // compute at its measured share ratio
    EXPECT_NE(b.routed_fp8.source.find("routed"), std::string::npos) << b.routed_fp8.source;
  }
  // AMD's engines run AITER's fused MoE: its rows on the MI300X (bf16) and the MI325X (fp8),
  // each carried to the other (the same die) at their measured bf16 ceilings, 51.4% and 60.4%
  // of spec: 51.4 / 60.4 = 0.85099 onto the MI300X, 60.4 / 51.4 = 1.17510 onto the MI325X
  const GemmProfile mi300x = gemm_profile_for("mi300x"), mi325x = gemm_profile_for("mi325x");
  EXPECT_EQ(mi300x.routed_bf16.basis, Basis::kMeasured);
  EXPECT_EQ(mi325x.routed_fp8.basis, Basis::kMeasured);
  EXPECT_EQ(mi300x.routed_fp8.basis, Basis::kTransferred);
  EXPECT_EQ(mi325x.routed_bf16.basis, Basis::kTransferred);
  EXPECT_NEAR(mi300x.routed_fp8.ratio, 51.4 / 60.4, 1e-12);
  EXPECT_NEAR(mi325x.routed_bf16.ratio, 60.4 / 51.4, 1e-12);
  EXPECT_DOUBLE_EQ(mi300x.routed_fp8.curve.share_at(8.0), mi325x.routed_fp8.curve.share_at(8.0));
  EXPECT_NE(mi325x.routed_fp8.source.find("AITER"), std::string::npos) << mi325x.routed_fp8.source;
  EXPECT_EQ(gemm_profile_for("mi355x").routed_fp8.curve.n, 0);  // CDNA4: no rows
  EXPECT_EQ(gemm_profile_for("mi355x").routed_bf16.curve.n, 0);
  // 4-bit experts on Hopper run weight-only kernels: no curve; on Blackwell the fp8 curve at
  // the fp4 ceiling ratio, extrapolated
  EXPECT_EQ(h200.routed_of(DType::kFp4).curve.n, 0);
  const GemmProfile b200 = gemm_profile_for("b200");
  EXPECT_EQ(b200.routed_of(DType::kFp4).curve.n, b200.routed_fp8.curve.n);
  EXPECT_EQ(b200.routed_of(DType::kFp4).basis, Basis::kExtrapolated);
  EXPECT_DOUBLE_EQ(b200.routed_of(DType::kFp4).ratio, b200.fp4.ceiling_ratio);
  EXPECT_EQ(gemm_profile_for("mi355x").routed_of(DType::kFp4).curve.n, 0);
}

TEST(Silicon, ANewerGenerationNeverDecodesTheEnginesMoeSlower) {
  // A B200 has 1.67x an H200's HBM bandwidth and 2.3x its tensor rate: on the same plan and
  // engine it never decodes slower. (Before the fused MoE's rows were carried to Blackwell, vLLM
  // and SGLang's MoE layers fell to the fitted expert stream there, and DeepSeek-V3 at TP8 and
  // 64 sequences decoded in 37.3 ms on a B200 against 31.8 on an H200.)
  using namespace test_support;
  for (const char* model : {"qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3", "qwen3-235b-a22b", "llama-3.1-70b"}) {
    const std::int32_t tp = std::string(model) == "qwen3-30b-a3b" || std::string(model) == "mixtral-8x7b" ? 2 : 8;
    auto m = load_model(model);
    auto h = cluster_from_preset(fmt::format("h200x{}", tp));
    auto b = cluster_from_preset(fmt::format("b200x{}", tp));
    ASSERT_TRUE(m.ok() && h.ok() && b.ok());
    int compared = 0;  // the pairs where both fit in memory
    for (const char* engine : {"vllm", "sglang", "trtllm"}) {
      for (std::int64_t batch : {8, 64, 256}) {
        const SimContext ch = make_context(*m, *h, decode(2000), cost_params_for("h200"), *load_engine_profile(engine));
        const SimContext cb = make_context(*m, *b, decode(2000), cost_params_for("b200"), *load_engine_profile(engine));
        const Metrics mh = evaluate(ch, plan(tp, batch)), mb = evaluate(cb, plan(tp, batch));
        if (mh.infeasible == Infeasible::kMemory || mb.infeasible == Infeasible::kMemory) continue;
        ++compared;
        EXPECT_LE(mb.tpot_s, mh.tpot_s) << model << " " << engine << " batch " << batch;
      }
    }
    // every engine at every batch fits both chips (a model dropped by memory would pass unchecked)
    EXPECT_EQ(compared, 9) << model;
  }
}

namespace {
// The copies per touched expert of `tokens` tokens routed uniformly to top-`k` of `experts`:
// E (1 - (1 - k/E)^T) experts touched.
double copies_per_touched(double tokens, double k, double experts) {
  return tokens * k / (experts * (1.0 - std::pow(1.0 - k / experts, tokens)));
}
// The expert GEMMs of a step priced by the engine's measured fused MoE, memory-bound: each is
// the kernel's floor plus its bytes over the GPU's HBM at the share its table's curve reaches
// at `copies` per touched expert: the curve of its own shape `up` (expert_ffn1, N x K) or
// `down` (expert_ffn2) where that shape is measured (nullptr: none), else the pooled one.
// Their sum.
double routed_expert_seconds(const Breakdown& b, const SimContext& ctx, double copies, const ShapeCurve* up, const ShapeCurve* down) {
  double sum = 0;
  for (const auto& o : b.ops) {
    if (o.op != "expert_ffn1" && o.op != "expert_ffn2") continue;
    EXPECT_EQ(o.basis, Basis::kMeasured) << o.table;
    EXPECT_STREQ(o.bound, "memory");
    const ShapeCurve* sc = o.op == "expert_ffn1" ? up : down;
    const double share = (sc ? sc->curve : ctx.moe_routed.curve).share_at(copies);
    const double want = (ctx.moe_routed_floor_s + o.hbm_bytes / (ctx.cluster.gpu.hbm_bandwidth.value() * share)) * ctx.params.scales.experts;
    EXPECT_NEAR(o.compute_s, want, want * 1e-9) << o.op;
    // --explain names the shape's rows where they priced it
    EXPECT_EQ(o.table.find(" alone (") != std::string::npos, sc != nullptr) << o.table;
    sum += o.compute_s;
  }
  return sum;
}
// The expert GEMMs' compute seconds of a step, whatever priced them, each with basis `basis`.
double expert_seconds(const Breakdown& b, Basis basis) {
  double sum = 0;
  for (const auto& o : b.ops) {
    if (o.op != "expert_ffn1" && o.op != "expert_ffn2") continue;
    EXPECT_EQ(o.basis, basis) << o.op;
    sum += o.compute_s;
  }
  return sum;
}
}  // namespace

TEST(Silicon, AitersTunedMoeTimesBecomeRoutedRowsByTheTouchedExperts) {
  // scripts/curate_silicon.py reads AITER's tuner rows (data/silicon/published/aiter_fmoe.csv):
  // DeepSeek-V3.2's EP8 MoE on the MI325X, 33 experts (32 routed + the shared one), top-9. At
  // 2 tokens the uniformly random routing touches 33 x (1 - (24/33)^2) = 33 x 513/1089 =
  // 15.545 experts, so 18 copies are 1.1579 per touched expert; stage 1 (gate + up) is
  // N = 2 x 2048 = 4096 by K = 7168 in 105.5271 us, stage 2 (down) 7168 by 2048 in 64.1544 us
  int found = 0;
  for (const GroupedRow& r : builtin_silicon().grouped) {
    if (r.silicon != "mi325x" || r.kernel.find(", 2 tokens top-9 of 33,") == std::string::npos) continue;
    ++found;
    EXPECT_EQ(r.layout, "routed");
    EXPECT_EQ(r.dtype, "fp8");
    EXPECT_NEAR(r.groups, 33.0 * 513.0 / 1089.0, 0.005);
    EXPECT_NEAR(r.m, 18.0 / (33.0 * 513.0 / 1089.0), 5e-5);
    const bool up = r.kernel.find("stage 1") != std::string::npos;
    EXPECT_EQ(r.n, up ? 4096 : 7168);
    EXPECT_EQ(r.k, up ? 7168 : 2048);
    EXPECT_NEAR(r.seconds, up ? 105.5271e-6 : 64.1544e-6, 1e-12);
    EXPECT_NE(r.locator.find("ROCm/aiter@"), std::string::npos) << r.locator;
  }
  EXPECT_EQ(found, 2);
}

TEST(Silicon, TheEnginesFusedMoePricesTensorParallelExperts) {
  using namespace test_support;
  auto m = load_model("deepseek-v3");
  auto c = cluster_from_preset("h200x8");
  ASSERT_TRUE(m.ok() && c.ok());
  const CostParams p = cost_params_for("h200");  // the fitted model: the engine's kernel is read all the same
  const SimContext sg = make_context(*m, *c, decode(1536), p, *load_engine_profile("sglang"));
  const SimContext tr = make_context(*m, *c, decode(1536), p, *load_engine_profile("trtllm"));
  ASSERT_GT(sg.moe_routed.curve.n, 0);
  EXPECT_EQ(tr.moe_routed.curve.n, 0);
  // TP8, 8 sequences: 64 token copies over the experts touched, 256 x (1 - (1 - 8/256)^8) =
  // 57.42, so 1.1146 copies per touched expert; memory-bound, the op takes the floor plus its
  // bytes over the H200's HBM at the measured share there: the rows of its own shape, both
  // measured (gate + up: N 2 x 2048 / 8 = 512 by K 7168; down: 7168 by 256)
  const ShapeCurve* up = sg.moe_routed.shape(true, 512, 7168);
  const ShapeCurve* down = sg.moe_routed.shape(false, 7168, 256);
  ASSERT_NE(up, nullptr);
  ASSERT_NE(down, nullptr);
  const Breakdown bs = breakdown_step(sg, plan(8, 8), Phase::kDecode, 8, 1536);
  const Breakdown bt = breakdown_step(tr, plan(8, 8), Phase::kDecode, 8, 1536);
  const double sg_experts = routed_expert_seconds(bs, sg, copies_per_touched(8, 8, 256), up, down);
  // TensorRT-LLM's CUTLASS MoE: its own measured weight stream, from the B200's table (on the
  // H200 extrapolated: tests/cost/trtllm_moe_test.cpp)
  const double tr_experts = expert_seconds(bt, Basis::kExtrapolated);
  EXPECT_GT(sg_experts, 0);
  EXPECT_GT(tr_experts, 0);
}

TEST(Silicon, TheEnginesFusedMoePricesOneGpusExpertsToo) {
  // On one GPU every token and every expert is local: vLLM and SGLang run the same fused MoE
  // kernel as at TP2 and above, so its measured rows price it there too. (Before, one GPU fell
  // to the fitted expert efficiency: Qwen3-30B-A3B on an H100, 64 sequences at a 1,000-token
  // context, decoded at 55.4 ms per token on one GPU against 18.3 on two: 3x for 2x the GPUs.)
  using namespace test_support;
  auto m = load_model("mixtral-8x7b");
  auto c1 = cluster_from_preset("h100x1");
  auto c2 = cluster_from_preset("h100x2");
  ASSERT_TRUE(m.ok() && c1.ok() && c2.ok());
  const CostParams p = cost_params_for("h100");
  const SimContext one = make_context(*m, *c1, decode(1536), p, *load_engine_profile("vllm"));
  const SimContext two = make_context(*m, *c2, decode(1536), p, *load_engine_profile("vllm"));
  ASSERT_GT(one.moe_routed.curve.n, 0);
  // 8 sequences, top-2 of 8 experts: 16 token copies over 8 x (1 - (1 - 2/8)^8) = 8 x (1 -
  // 0.100113) = 7.19910 touched experts, 2.22250 copies per touched expert; memory-bound, the
  // op takes the floor plus its bytes over the H100's HBM at the measured share there
  // (Mixtral's shapes are not among the measured ones: the pooled curve)
  ASSERT_EQ(one.moe_routed.shape(true, 2 * 14336, 4096), nullptr);
  ASSERT_EQ(one.moe_routed.shape(false, 4096, 14336), nullptr);
  const Breakdown b1 = breakdown_step(one, plan(1, 8), Phase::kDecode, 8, 1536);
  const Breakdown b2 = breakdown_step(two, plan(2, 8), Phase::kDecode, 8, 1536);
  const double t1 = routed_expert_seconds(b1, one, copies_per_touched(8, 2, 8), nullptr, nullptr);
  const double t2 = expert_seconds(b2, Basis::kMeasured);
  // TP2 reads half of each expert per GPU: one GPU takes about twice as long, not 4.6x (the
  // fitted model's share on one GPU against the kernel's on two)
  ASSERT_GT(t2, 0);
  EXPECT_GT(t1 / t2, 1.6);
  EXPECT_LT(t1 / t2, 2.2);
}

TEST(Silicon, TheFusedMoeReadsTheRowsOfItsOwnShapeWhereTheyAreMeasured) {
  // The H200's Triton fused-MoE rows of DeepSeek-V3 at TP8 (data/silicon/grouped_gemm.csv,
  // layout routed): gate + up (N 512, K 7168) and down (N 7168, K 256) by tokens. The curve
  // pooled over every measured shape takes one median share for both, 0.58 at 1.11 copies per
  // touched expert, where up reaches about 0.75 of its roofline and down 0.43; the op now reads
  // its own shape's rows. Measured (us): 8 tokens 58.726 + 50.675 = 109.401; 16: 96.168 +
  // 69.078 = 165.246; 32: 145.796 + 104.264 = 250.060; 64: 192.948 + 139.227 = 332.175. The
  // simulated sum lands within 3% of each (the rows' touched experts are the tuner's routing,
  // the simulator's the expectation: 57.42 of 256 at 8 tokens against the row's 57.5). The
  // pooled curve priced the 8-token pair at 122.7 us, 12% over.
  using namespace test_support;
  auto m = load_model("deepseek-v3");
  auto c = cluster_from_preset("h200x8");
  ASSERT_TRUE(m.ok() && c.ok());
  const SimContext sg = make_context(*m, *c, decode(1536), cost_params_for("h200"), *load_engine_profile("sglang"));
  ASSERT_NE(sg.moe_routed.shape(true, 512, 7168), nullptr);
  ASSERT_NE(sg.moe_routed.shape(false, 7168, 256), nullptr);
  EXPECT_EQ(sg.moe_routed.shape(true, 512, 7168)->curve.rows, 14);
  const std::map<std::int64_t, double> measured_us = {{8, 109.401}, {16, 165.246}, {32, 250.060}, {64, 332.175}};
  for (const auto& [tokens, want] : measured_us) {
    const Breakdown b = breakdown_step(sg, plan(8, tokens), Phase::kDecode, tokens, 1536);
    double us = 0;
    for (const auto& o : b.ops) {
      if (o.op == "expert_ffn1" || o.op == "expert_ffn2") us += o.compute_s * 1e6;
    }
    EXPECT_NEAR(us / want, 1.0, 0.03) << tokens << " tokens: " << us << " us";
  }
  // Blackwell runs another kernel: the H100's rows are carried there pooled, never by shape
  const GemmProfile b200 = gemm_profile_for("b200");
  EXPECT_TRUE(b200.routed_fp8.shapes.empty());
  EXPECT_FALSE(gemm_profile_for("h200").routed_fp8.shapes.empty());
  EXPECT_FALSE(gemm_profile_for("h20").routed_fp8.shapes.empty());  // a Hopper die: the H100's rows, shapes and all
  // a shape is its GEMM's: GPT-OSS-120B's TP1 down GEMM (2,880 x 2,880) is measured, an up GEMM of
  // the same N x K (GPT-OSS-120B's at TP2: 2 x 2,880 / 2 by 2,880) is not, and reads the pooled curve
  const GemmProfile h200 = gemm_profile_for("h200");
  ASSERT_NE(h200.routed_bf16.shape(false, 2880, 2880), nullptr);
  EXPECT_FALSE(h200.routed_bf16.shape(false, 2880, 2880)->up);
  EXPECT_EQ(h200.routed_bf16.shape(true, 2880, 2880), nullptr);
  ASSERT_NE(h200.routed_bf16.shape(true, 5760, 2880), nullptr);
  // AMD: AITER's stage 1 (gate + up) and stage 2 (down) rows by shape, each chip's own and its
  // twin's carried: DeepSeek-V3.2's EP8 experts on the MI325X (4,096 x 7,168 and 7,168 x 2,048)
  for (const char* g : {"mi325x", "mi300x"}) {
    const GemmProfile amd = gemm_profile_for(g);
    EXPECT_NE(amd.routed_fp8.shape(true, 4096, 7168), nullptr) << g;
    EXPECT_NE(amd.routed_fp8.shape(false, 7168, 2048), nullptr) << g;
    EXPECT_EQ(amd.routed_fp8.shape(false, 4096, 7168), nullptr) << g;
  }
}

TEST(Silicon, FourBitExpertsNeverDecodeSlowerThanEightBitOnesOnBlackwell) {
  // On a GPU with fp4 tensor cores, fp4 experts read half the bytes and compute at a higher
  // peak: on the same plan and engine they never decode slower than fp8 experts. (Before the
  // engines' fused MoE priced fp4 experts on Blackwell, vLLM's fp8 experts streamed at the
  // kernel's share and its fp4 ones at the fitted 0.365: Qwen3-235B-A22B at TP8 decoded 8
  // sequences in 14.96 ms with fp4 experts against 13.77 with fp8.)
  using namespace test_support;
  for (const char* model : {"qwen3-235b-a22b", "deepseek-v3", "mixtral-8x7b"}) {
    const std::int32_t tp = std::string(model) == "mixtral-8x7b" ? 2 : 8;
    auto m = load_model(model);
    ASSERT_TRUE(m.ok());
    int compared = 0;  // the pairs where both fit in memory
    for (const char* gpu : {"b200", "gb200", "b300"}) {
      auto c = cluster_from_preset(fmt::format("{}x{}", gpu, tp));
      ASSERT_TRUE(c.ok());
      for (const char* engine : {"vllm", "sglang", "trtllm"}) {
        for (std::int64_t batch : {8, 64, 256}) {
          Workload w8 = decode(2000), w4 = decode(2000);
          w8.weights_dtype = DType::kFp8;
          w4.weights_dtype = DType::kFp4;
          const SimContext c8 = make_context(*m, *c, w8, cost_params_for(gpu), *load_engine_profile(engine));
          const SimContext c4 = make_context(*m, *c, w4, cost_params_for(gpu), *load_engine_profile(engine));
          const Metrics m8 = evaluate(c8, plan(tp, batch)), m4 = evaluate(c4, plan(tp, batch));
          if (m8.infeasible == Infeasible::kMemory || m4.infeasible == Infeasible::kMemory) continue;
          ++compared;
          EXPECT_LE(m4.tpot_s, m8.tpot_s) << model << " " << gpu << " " << engine << " batch " << batch;
        }
      }
    }
    // every GPU, engine and batch fits (a model dropped by memory would pass unchecked)
    EXPECT_EQ(compared, 27) << model;
  }
}

TEST(Silicon, ExplainSharesAddUpOverTheLayers) {
  // two ops: a measured GEMM of 1 ms x 10 layers with 0.5 ms of communication per layer, and a
  // model-costed norm of 0.2 ms x 10 -> total 10 + 5 + 2 = 17 ms; measured 10 / 17 = 58.8%
  Breakdown bd;
  OpCost gemm;
  gemm.compute_s = 1e-3;
  gemm.comm_s = 0.5e-3;
  gemm.layers = 10;
  gemm.basis = Basis::kMeasured;
  OpCost norm;
  norm.compute_s = 0.2e-3;
  norm.layers = 10;
  bd.ops = {gemm, norm};
  const ExplainShares e = explain_shares(bd);
  EXPECT_NEAR(e.total_s, 17e-3, 1e-15);
  EXPECT_NEAR(e.measured_s, 10e-3, 1e-15);
  EXPECT_NEAR(e.model_s, 7e-3, 1e-15);
  EXPECT_NEAR(e.backed(), 10.0 / 17.0, 1e-12);
  EXPECT_NEAR(e.measured_s + e.transferred_s + e.extrapolated_s + e.model_s, e.total_s, 1e-15);
}

}  // namespace
}  // namespace shardwise
