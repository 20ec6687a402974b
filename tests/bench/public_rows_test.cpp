// The mapping of ../shared/calibration/public-measurements.csv onto simulator cases
// (bench/public_rows.cpp), which every validation figure rests on: each row as its notes
// and columns say it ran, and the statistics the benchmarks print.
#include <gtest/gtest.h>

#include <cmath>

#include "mlperf_rows.hpp"
#include "public_rows.hpp"
#include "serve/serving.hpp"
#include "trtllm_bench_rows.hpp"

namespace shardwise::bench {
namespace {

const PublicRow* find(const std::vector<PublicRow>& rows, int id, RowMetric metric) {
  for (const PublicRow& r : rows) {
    if (r.id == id && r.metric == metric) return &r;
  }
  return nullptr;
}

// A perf-overview row run as the page documents it: `requests` at once, through the serving
// simulation, with the page's 15 CUDA-graph sizes (1 to 8,192)
void expect_page_run(const PublicRow* r, std::int64_t requests) {
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->workload.mode, Mode::kServe) << r->id;
  EXPECT_EQ(r->workload.serve.arrivals.kind, Arrivals::Kind::kBurst) << r->id;
  EXPECT_EQ(r->workload.serve.requests, requests) << r->id;
  ASSERT_EQ(r->engine.cuda_graph_batch_sizes.size(), 15u) << r->id;
  EXPECT_EQ(r->engine.cuda_graph_batch_sizes.front(), 1) << r->id;
  EXPECT_EQ(r->engine.cuda_graph_batch_sizes.back(), 8192) << r->id;
}

// A file of data/validation/ (held-out rows), read as the shared file is
Expected<std::vector<PublicRow>> held_out(const char* file, std::vector<std::string>* skipped) {
  return load_public_rows(held_out_dir() + "/" + file, skipped);
}

// The cells of a TensorRT-LLM perf-overview page held out in `file`: every one maps (none
// skipped), each a trtllm-bench offline run with a measured throughput (`metric`: a closed
// form, or the run the post-1.0 page documents)
std::vector<PublicRow> perf_overview_cells(const char* file, RowMetric metric) {
  std::vector<std::string> skipped;
  auto rows = held_out(file, &skipped);
  EXPECT_TRUE(rows.ok()) << (rows.ok() ? "" : rows.error().message());
  if (!rows) return {};
  EXPECT_TRUE(skipped.empty()) << (skipped.empty() ? "" : skipped.front());
  for (const PublicRow& r : *rows) {
    EXPECT_EQ(r.metric, metric) << r.id;
    EXPECT_GT(r.measured, 0.0) << r.id;
    EXPECT_EQ(r.engine_name, "trtllm") << r.id;
  }
  return std::move(*rows);
}

TEST(PublicRows, EveryRowMapsOrSaysWhyNot) {
  std::vector<std::string> skipped;
  auto rows = load_public_rows(default_csv_path(), &skipped);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  std::size_t serve = 0, other = 0;
  for (const PublicRow& r : *rows) (r.scenario == "serve" ? serve : other) += 1;
  // 40 closed-form rows and MLPerf's 7 Offline rows; the 10 closed-loop rows give 18 checks
  // (output tok/s for all ten, mean TTFT and TPOT for the four that publish them) and MLPerf's
  // 17 Server/Interactive rows 7 each (tok/s; TTFT and TPOT mean, p50, p99): 18 + 119 = 137
  EXPECT_EQ(other, 47u);
  EXPECT_EQ(serve, 137u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("row 113"), std::string::npos);
  EXPECT_NE(skipped[0].find("offloaded"), std::string::npos);
}

TEST(PublicRows, RowsRunAsTheirSourcesSay) {
  auto rows = load_public_rows(default_csv_path());
  ASSERT_TRUE(rows.ok());
  // 119: vLLM wide EP on 32 H200, "DBO" in its engine column: DP 32 x EP 32, attention TP 1,
  // the dense MLPs data-parallel, two-batch overlap; decode-only at the mean context 2000 + 2000/2
  const PublicRow* r = find(*rows, 119, RowMetric::kDecodeThroughput);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->plan.deg.attn_dp, 32);
  EXPECT_EQ(r->plan.deg.ep, 32);
  EXPECT_EQ(r->plan.deg.tp, 1);
  EXPECT_TRUE(r->plan.two_batch_overlap);
  EXPECT_EQ(r->workload.context, 3000);
  EXPECT_EQ(r->plan.sharding[static_cast<std::size_t>(Slot::kFfn1)], find_choice(static_cast<int>(Slot::kFfn1), "none"));
  // no other row states an overlap
  for (const PublicRow& o : *rows) EXPECT_TRUE(o.id == 119 || !o.plan.two_batch_overlap) << o.id;
  // 158: InferenceX's SGLang launch at 1k/1k: lengths uniform in [0.8 L, L] = [819, 1024],
  // a 32,768-token prefill budget, 512 running requests, ten requests per user
  r = find(*rows, 158, RowMetric::kServeTpot);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->workload.serve.input && r->workload.serve.output);
  EXPECT_EQ(r->workload.serve.input->kind, LengthDist::Kind::kUniform);
  EXPECT_EQ(r->workload.serve.input->min, 819);
  EXPECT_EQ(r->workload.serve.output->max, 1024);
  EXPECT_EQ(r->engine.max_num_tokens, 32768);
  EXPECT_EQ(r->engine.max_num_seqs, 512);
  EXPECT_EQ(r->workload.serve.requests, 80);
  EXPECT_DOUBLE_EQ(r->measured, 12.8);
  // benchmark_serving's figures are over every request it sent: the first wave of eight
  // prompts, prefilled together, counts in the mean TTFT (8 of the 80), where the
  // simulation's steady window leaves it out; an MLPerf row is loadgen's
  EXPECT_EQ(r->client, RowClient::kBenchmarkServing);
  {
    const PublicRow* t = find(*rows, 158, RowMetric::kServeTtft);
    ASSERT_NE(t, nullptr);
    const CostParams p = cost_params_for(t->gpu);
    const ServeResult steady = simulate_serving(make_context(t->model, t->cluster, t->workload, p, t->engine), t->plan);
    EXPECT_GT(predict(*t, p), steady.ttft_ms.mean * 1.2);
  }
  // 311: MLPerf Server on GB200 NVL72, nine TP8/EP8 attention-DP instances on 72 GPUs: the
  // world of one instance is 8 (tp 8, ep 8, dp 8), so attention TP 1, 9 replicas; Poisson at
  // the scheduled 45.06 samples/s; gpu_batch_size 512 per rank, max_num_tokens 3456; the
  // 210,624 queries loadgen issued (its generated_query_count, over 4,675 s: ten minutes of
  // arrivals would be 27,036); TTFT p99 and TPOT p50 from the notes
  r = find(*rows, 311, RowMetric::kServeTtftP99);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->client, RowClient::kLoadgen);
  EXPECT_EQ(r->plan.deg.tp, 1);
  EXPECT_EQ(r->plan.deg.attn_dp, 8);
  EXPECT_EQ(r->plan.deg.ep, 8);
  EXPECT_EQ(r->plan.deg.replicas, 9);
  EXPECT_EQ(r->workload.serve.arrivals.kind, Arrivals::Kind::kPoisson);
  EXPECT_DOUBLE_EQ(r->workload.serve.arrivals.rate, 45.06);
  EXPECT_EQ(r->workload.serve.requests, 210624);
  EXPECT_EQ(r->engine.max_num_seqs, 512);
  EXPECT_EQ(r->engine.max_num_tokens, 3456);
  EXPECT_DOUBLE_EQ(r->measured, 1245.96);  // "TTFT mean/p50/p99 = 658.7/641.44/1245.96 ms"
  EXPECT_DOUBLE_EQ(find(*rows, 311, RowMetric::kServeTpotP50)->measured, 61.29);
  // DeepSeek-R1's inputs are left-skewed (mean 803.79 below the median 901.5): fixed at the
  // mean; its reference outputs right-skewed (4043.45 over 2194): a lognormal of sigma
  // sqrt(2 ln(4043.45 / 2194)) = sqrt(2 x 0.61139) = 1.10579, capped at NVIDIA's
  // max_output_len 20,000 (the reference ran to 32,768), whose clamped draws average the
  // row's own mean 3744 (the parameter above it: the clamp takes the tail's excess off)
  EXPECT_FALSE(r->workload.serve.input.has_value());
  ASSERT_TRUE(r->workload.serve.output.has_value());
  EXPECT_NEAR(r->workload.serve.output->sigma, 1.10579, 1e-4);
  EXPECT_EQ(r->workload.serve.output->max, 20000);
  EXPECT_GT(r->workload.serve.output->mean, 3744);
  EXPECT_NEAR(clamped_lognormal_mean(r->workload.serve.output->mean, r->workload.serve.output->sigma, 1, 20000), 3744, 1e-5);
  // NVIDIA's configs run the capacity scheduler's max_util policy: KV on demand
  EXPECT_FALSE(r->engine.reserve_full_kv);
  EXPECT_EQ(r->engine.adp_wait_iters, 3);
  EXPECT_EQ(r->engine.adp_timeout_iters, 9);
  // 301: OpenOrca inputs, sigma = sqrt(2 ln(222.33 / 152)) = sqrt(2 x 0.38029) = 0.87212,
  // clamped to the set's 48-1021 tokens
  r = find(*rows, 301, RowMetric::kServeOutput);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->workload.serve.input.has_value());
  EXPECT_NEAR(r->workload.serve.input->sigma, 0.87212, 1e-4);
  EXPECT_EQ(r->workload.serve.input->min, 48);
  EXPECT_EQ(r->workload.serve.input->max, 1021);
  EXPECT_EQ(r->workload.isl, 222);
  // 303: Offline, "max_num_tokens build 5120 / runtime 1536": the runtime budget; 128
  // sequences per TensorRT-LLM micro-batch (256 on the TP2 x PP2 instance); the run's one
  // query of 8,313 samples all at once, through the serving simulation
  r = find(*rows, 303, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->scenario, "offline");
  EXPECT_EQ(r->engine.max_num_tokens, 1536);
  EXPECT_EQ(r->engine.max_num_seqs, 128);
  EXPECT_EQ(scheduler_lanes(r->engine, r->plan.deg), 2);
  EXPECT_EQ(r->plan.deg.tp, 2);
  EXPECT_EQ(r->plan.deg.pp, 2);
  EXPECT_EQ(r->plan.deg.replicas, 2);
  EXPECT_EQ(r->workload.mode, Mode::kServe);
  EXPECT_EQ(r->workload.serve.arrivals.kind, Arrivals::Kind::kBurst);
  EXPECT_EQ(r->workload.serve.requests, 8313);
  EXPECT_FALSE(r->engine.reserve_full_kv);
  // 309: DeepSeek-R1 Offline, 26,328 samples (6 x 4,388), the Offline config's balancing
  r = find(*rows, 309, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->workload.serve.requests, 26328);
  EXPECT_EQ(r->engine.adp_wait_iters, 10);
  EXPECT_EQ(r->engine.adp_timeout_iters, 500);
  ASSERT_TRUE(r->workload.serve.output.has_value());
  EXPECT_EQ(r->workload.serve.output->max, 20000);
  // a decode-batch target's minimum, maximum and step
  const auto expect_target = [](const PublicRow& x, std::int64_t lo, std::int64_t hi, std::int64_t step) {
    EXPECT_EQ(x.engine.decode_target_min, lo) << x.id;
    EXPECT_EQ(x.engine.decode_target_max, hi) << x.id;
    EXPECT_EQ(x.engine.decode_target_step, step) << x.id;
  };
  // 316: vLLM on MI300X, max_num_seqs 1792 and max_num_batched_tokens 40960; 245,760 samples
  r = find(*rows, 316, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->gpu, "mi300x");
  EXPECT_EQ(r->engine.max_num_seqs, 1792);
  EXPECT_EQ(r->engine.max_num_tokens, 40960);
  EXPECT_EQ(r->workload.serve.requests, 245760);
  EXPECT_TRUE(r->engine.prefill_first);  // AMD's V0 config: no chunked prefill
  // its decode-batch target (VLLM_LLAMA2_MLPERF_*: 1280 / 1536 / 256; 2200 blocks of 32 tokens free)
  EXPECT_EQ(r->engine.kv_block_tokens, 32);
  expect_target(*r, 1280, 1536, 256);
  EXPECT_EQ(r->engine.prefill_min_free_tokens, 2200 * 32);
  EXPECT_EQ(r->engine.prefill_min_waiting, 10);  // the patch's default where the config sets none
  // 321 and 322: MI325X Offline (2048 / 2048 / 256) and Server (512-832 by 16, 10 waited for)
  r = find(*rows, 321, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  expect_target(*r, 2048, 2048, 256);
  EXPECT_EQ(r->engine.prefill_min_free_tokens, 0);
  r = find(*rows, 322, RowMetric::kServeTpot);
  ASSERT_NE(r, nullptr);
  expect_target(*r, 512, 832, 16);
  EXPECT_EQ(r->engine.prefill_min_waiting, 10);
  EXPECT_EQ(r->engine.kv_block_tokens, 32);
  // 317: the Server config's target 352-608 by 16, prompts waited for until 8; 320 (Mixtral): none
  r = find(*rows, 317, RowMetric::kServeTtft);
  ASSERT_NE(r, nullptr);
  expect_target(*r, 352, 608, 16);
  EXPECT_EQ(r->engine.prefill_min_waiting, 8);
  EXPECT_EQ(r->engine.decode_steps, 9);
  r = find(*rows, 320, RowMetric::kServeTtft);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->engine.decode_target_max, 0);
  EXPECT_EQ(r->engine.kv_block_tokens, 16);
  // 103: TensorRT-LLM min-latency with three MTP layers at the workload's acceptance 0.85
  r = find(*rows, 103, RowMetric::kStaticBatchThroughput);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->workload.spec_tokens, 3);
  EXPECT_DOUBLE_EQ(r->workload.spec_acceptance, 0.85);
  EXPECT_EQ(r->plan.batch, 1);
}

TEST(PublicRows, TensorRtLlmRowsRunTheMoeBackendTheirConfigNames) {
  // NVIDIA's B200 min-latency recipe (row 100) sets moe_config backend TRTLLM: no CUTLASS
  // module floor, TRTLLM-Gen's measured weight stream; the perf-overview page runs GPT-OSS on
  // Hopper with its TRITON backend (rows 144, 145, 147): neither the floor nor a measured
  // stream (the fit's); every other TensorRT-LLM row runs its default CUTLASS backend (the H200
  // min-latency recipe, row 103, names none)
  auto rows = load_public_rows(default_csv_path());
  ASSERT_TRUE(rows.ok());
  int trtllm = 0, triton = 0;
  for (const PublicRow& r : *rows) {
    if (r.engine_name != "trtllm") continue;
    ++trtllm;
    const bool hopper_gpt_oss = r.label.rfind("GPT-OSS", 0) == 0 && (r.gpu == "h100" || r.gpu == "h200");
    triton += hopper_gpt_oss ? 1 : 0;
    EXPECT_DOUBLE_EQ(r.engine.moe_module_floor_us, r.id == 100 || hopper_gpt_oss ? 0.0 : 56.7) << r.id;
    EXPECT_DOUBLE_EQ(r.engine.moe_expert_stream, r.id == 100 ? kTrtllmGenExpertStream : hopper_gpt_oss ? 0.0 : 0.376) << r.id;
  }
  EXPECT_GT(trtllm, 30);
  EXPECT_EQ(triton, 3);
  const PublicRow* r100 = find(*rows, 100, RowMetric::kStaticBatchThroughput);
  ASSERT_NE(r100, nullptr);
  EXPECT_DOUBLE_EQ(r100->engine.moe_module_floor_us, 0.0);
  EXPECT_DOUBLE_EQ(r100->engine.moe_expert_stream, 0.662);
}

TEST(PublicRows, PerfOverviewRowsRunAsThePageDocumentsThem) {
  // TensorRT-LLM's post-1.0 perf-overview page (commit 03e27c7d5ff0): trtllm-bench over the
  // page's request count, all queued at once, CUDA graphs padded to its list, DeepSeek-R1's
  // attention-DP balancing (batching_wait_iters 0, timeout_iters 60)
  EXPECT_EQ(perf_overview_requests(1024, 1024), 3000);
  EXPECT_EQ(perf_overview_requests(1000, 1000), 3000);  // omitted by the page's table: 1024/1024's
  EXPECT_EQ(perf_overview_requests(8192, 1024), 1500);
  EXPECT_EQ(perf_overview_requests(1024, 8192), 1500);
  EXPECT_EQ(perf_overview_requests(32768, 1024), 1000);
  EXPECT_EQ(perf_overview_requests(1024, 32768), 1000);
  EXPECT_EQ(perf_overview_requests(2048, 128), 0);
  auto rows = load_public_rows(default_csv_path());
  ASSERT_TRUE(rows.ok());
  const PublicRow* r = find(*rows, 147, RowMetric::kOfflineRun);  // GPT-OSS-20B, H100, 1000/1000
  expect_page_run(r, 3000);
  if (r == nullptr) return;
  EXPECT_EQ(r->engine.adp_timeout_iters, 0);  // balancing is DeepSeek-R1's option only
  r = find(*rows, 141, RowMetric::kOfflineRun);  // DeepSeek-R1, H200 DEP8, 1024/32768
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->workload.serve.requests, 1000);
  EXPECT_EQ(r->engine.adp_wait_iters, 0);
  EXPECT_EQ(r->engine.adp_timeout_iters, 60);
  // every row of the page in the shared file runs so, at its length pair's count
  for (const auto& [id, n] : {std::pair{138, 1500}, {141, 1000}, {144, 1500}, {145, 1500}, {147, 3000}, {149, 3000}, {151, 1500},
                              {152, 1500}, {153, 1000}}) {
    const PublicRow* p = find(*rows, id, RowMetric::kOfflineRun);
    ASSERT_NE(p, nullptr) << id;
    EXPECT_EQ(p->workload.serve.requests, n) << id;
  }
  // rows 1-13 (TensorRT-LLM 0.19.0's page) run as that page documents: PerfOverview019RowsRunAsThePageDocumentsThem
}

TEST(PublicRows, TrtllmBenchRowsRunTheCapsTrtllmBenchDerives) {
  auto rows = load_public_rows(default_csv_path());
  ASSERT_TRUE(rows.ok());
  // 1: Llama-3.1-70B fp8 on one H100, 1000/1000, fraction 0.95: 43.4 requests -> 64; 2048 tokens
  const PublicRow* r = find(*rows, 1, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->engine.max_num_seqs, 64);
  EXPECT_EQ(r->engine.max_num_tokens, 2048);
  // 138: DeepSeek-R1 NVFP4 on 4 B200 (DEP4), 8192/1024: the MLA estimate's 68 requests on
  // the B200's 183,359 MiB (64.4 at the CLI's 0.90 x 0.95/0.90) up to a multiple of 32 = 96
  // per rank, and a whole 8192-token prompt beside them (8192 + 96)
  r = find(*rows, 138, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->engine.max_num_seqs, 96);
  EXPECT_EQ(r->engine.max_num_tokens, 8288);
  // 147: GPT-OSS-20B (MXFP4, not tuned): BuildConfig's 2048 and 8192
  r = find(*rows, 147, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->model.quant.method == "mxfp4");
  EXPECT_EQ(r->engine.max_num_seqs, 2048);
  EXPECT_EQ(r->engine.max_num_tokens, 8192);
  // 101 states its own caps (max_batch_size 896, max_num_tokens 2048): kept
  r = find(*rows, 101, RowMetric::kOfflineMaxThroughput);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->engine.max_num_tokens, 2048);
}

TEST(PublicRows, HeldOutH200RowsRunAsHpesConfigsSay) {
  // data/validation/mlperf-v5.1-h200-heldout.csv: HPE's H200 runs on NVIDIA's harness, never fitted
  std::vector<std::string> skipped;
  auto rows = held_out("mlperf-v5.1-h200-heldout.csv", &skipped);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  EXPECT_TRUE(skipped.empty());
  ASSERT_EQ(rows->size(), 2u);
  const PublicRow* r = find(*rows, 900, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->gpu, "h200");
  EXPECT_EQ(r->workload.serve.requests, 761976);  // 57 x 13,368
  EXPECT_EQ(r->engine.max_num_seqs, 2048);
  EXPECT_EQ(r->engine.max_num_tokens, 12000);
  EXPECT_FALSE(r->engine.reserve_full_kv);  // max_util, as NVIDIA's
  EXPECT_DOUBLE_EQ(r->measured, 8254.6);   // 66,036.8 / 8
  r = find(*rows, 901, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->workload.serve.requests, 319488);  // 13 x 24,576
  EXPECT_EQ(r->engine.max_num_seqs, 2506);
  EXPECT_EQ(r->engine.max_num_tokens, 1536);
}

TEST(PublicRows, PerfOverview019RowsRunAsThePageDocumentsThem) {
  // TensorRT-LLM 0.19.0's page (docs/source/performance/perf-overview.md @v0.19.0, the text
  // the shared file cites): its request table, all queued at once, the same graph sizes
  EXPECT_EQ(perf_overview_019_requests(128, 128), 30000);
  EXPECT_EQ(perf_overview_019_requests(128, 2048), 3000);
  EXPECT_EQ(perf_overview_019_requests(128, 4096), 1500);
  EXPECT_EQ(perf_overview_019_requests(1000, 2000), 1500);
  EXPECT_EQ(perf_overview_019_requests(2048, 128), 3000);
  EXPECT_EQ(perf_overview_019_requests(2048, 2048), 1500);
  EXPECT_EQ(perf_overview_019_requests(5000, 500), 1500);
  EXPECT_EQ(perf_overview_019_requests(1000, 1000), 3000);
  EXPECT_EQ(perf_overview_019_requests(500, 2000), 3000);
  EXPECT_EQ(perf_overview_019_requests(20000, 2000), 1000);
  EXPECT_EQ(perf_overview_019_requests(1024, 2048), 1500);  // omitted by the request table: 1000/2000's
  EXPECT_EQ(perf_overview_019_requests(1024, 1024), 0);
  EXPECT_TRUE(is_perf_overview_019_row("https://nvidia.github.io/TensorRT-LLM/0.19.0/performance/perf-overview.html ; github "
                                       "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @v0.19.0"));
  EXPECT_FALSE(is_perf_overview_019_row("NVIDIA/TensorRT-LLM docs/source/developer-guide/perf-overview.md"));
  auto rows = load_public_rows(default_csv_path());
  ASSERT_TRUE(rows.ok());
  // row 2: Llama-3.1-70B fp8, H100 TP2, 1000/1000: 3,000 requests at once
  const PublicRow* r = find(*rows, 2, RowMetric::kOfflineRun);
  expect_page_run(r, 3000);
  if (r == nullptr) return;
  // row 13: 20000/2000, 1,000 requests
  r = find(*rows, 13, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->workload.serve.requests, 1000);
  // every row of that page runs so (none left a closed form)
  for (const PublicRow& x : *rows) EXPECT_FALSE(x.id <= 13 && x.metric != RowMetric::kOfflineRun) << x.id;
}

TEST(PublicRows, HeldOutPerfOverviewCellsRunAsThePageSays) {
  // data/validation/trtllm-perf-overview-heldout.csv: the cells of TensorRT-LLM's perf-overview
  // page (commit 03e27c7) that the shared file leaves out, never fitted; every one maps
  const std::vector<PublicRow> rows = perf_overview_cells("trtllm-perf-overview-heldout.csv", RowMetric::kOfflineRun);
  ASSERT_EQ(rows.size(), 114u);
  // 923: GPT-OSS-120B, B200 DEP2 (FP4), 1000/1000: attention DP 2 x EP 2, MXFP4 experts (native
  // fp4 on Blackwell), the page's fp8 KV cache, trtllm-bench's untuned caps 2048 and 8192
  const PublicRow* r = find(rows, 923, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->gpu, "b200");
  EXPECT_EQ(r->plan.deg.attn_dp, 2);
  EXPECT_EQ(r->plan.deg.ep, 2);
  EXPECT_EQ(r->plan.deg.tp, 1);
  EXPECT_TRUE(r->model.quant.method == "mxfp4");
  EXPECT_EQ(r->workload.kv_dtype, DType::kFp8);
  EXPECT_EQ(r->engine.max_num_seqs, 2048);
  EXPECT_DOUBLE_EQ(r->measured, 25943.0);
  // 964: Llama-3.3-70B (Llama-3.1-70B's architecture), B200 TP1 (FP4): NVFP4 everywhere
  r = find(rows, 964, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->family, "dense");
  EXPECT_EQ(r->model.num_layers, 80);
  EXPECT_TRUE(r->model.quant.dense == DType::kFp4);
  // 981: Llama-4-Maverick, B200 DEP4 (FP4)
  r = find(rows, 981, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->family, "moe");
  EXPECT_EQ(r->plan.deg.attn_dp, 4);
}

TEST(PublicRows, HeldOutPerfOverview019CellsRunAsThePageSays) {
  // data/validation/trtllm-0.19-perf-overview-heldout.csv: TensorRT-LLM 0.19.0's page less
  // the 13 cells of the shared file; the page's totals over TP are the per-GPU figures
  const std::vector<PublicRow> rows = perf_overview_cells("trtllm-0.19-perf-overview-heldout.csv", RowMetric::kOfflineRun);
  ASSERT_EQ(rows.size(), 171u);
  for (const PublicRow& r : rows) EXPECT_EQ(r.family, "dense") << r.id;
  // 1101: Llama-3.3-70B NVFP4 on one B200, 128/128: 11,253.28 tok/s total, fp8 KV (ModelOpt);
  // the page's 30,000 requests at once
  const PublicRow* r = find(rows, 1101, RowMetric::kOfflineRun);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->gpu, "b200");
  EXPECT_TRUE(r->model.quant.dense == DType::kFp4);
  EXPECT_EQ(r->workload.kv_dtype, DType::kFp8);
  EXPECT_DOUBLE_EQ(r->measured, 11253.28);
  EXPECT_EQ(r->workload.serve.requests, 30000);
  // none of the shared file's cells again: Llama-3.1-70B fp8 on H100 TP2 at 1000/1000 is row 2
  for (const PublicRow& x : rows) {
    EXPECT_FALSE(x.gpu == "h100" && x.plan.deg.tp == 2 && x.workload.isl == 1000 && x.workload.osl == 1000 && x.model.num_layers == 80) << x.id;
  }
}

// A serving row's metric rows share one simulated run through the memo, and a run that differs
// (here 16 users, not 8) is simulated afresh, never read from the last one
TEST(PublicRows, ServeMemoReusesOnlyTheSameRun) {
  auto rows = load_public_rows(default_csv_path());
  ASSERT_TRUE(rows.ok());
  const PublicRow* tput = find(*rows, 158, RowMetric::kServeOutput);
  const PublicRow* ttft = find(*rows, 158, RowMetric::kServeTtft);
  ASSERT_TRUE(tput && ttft);
  const CostParams p = cost_params_for(ttft->gpu);
  ServeMemo memo;
  EXPECT_DOUBLE_EQ(predict(*tput, p, &memo), predict(*tput, p));
  EXPECT_EQ(memo.id, 158);
  EXPECT_DOUBLE_EQ(predict(*ttft, p, &memo), predict(*ttft, p));
  PublicRow other = *ttft;
  other.workload.serve.arrivals.concurrency = 16;
  other.workload.serve.requests = 160;
  const double fresh = predict(other, p);
  EXPECT_NE(fresh, predict(*ttft, p));
  EXPECT_DOUBLE_EQ(predict(other, p, &memo), fresh);
  EXPECT_EQ(memo.workload, other.workload);
}

// Loadgen's figures by hand: two queries of one instance counted twice (two replicas). A
// arrives at 0.5 s, first token 1.0, done at 10.0, 10 tokens; B, the last issued, arrives at
// 2.0, first token 2.5, done at 6.0, 5 tokens. "Completed tokens per second" is the tokens
// over the last-issued query's completion from the start: (10 + 5) x 2 / 6.0 = 5 tok/s, and
// 2 x 2 / 6.0 = 0.6667 queries/s (tool_stats' first arrival to last completion would give
// 30 / 9.5 = 3.158); TTFT mean (0.5 + 0.5) / 2 = 500 ms; TPOT (9 / 9 and 3.5 / 4 s) = 1000
// and 875 ms, mean 937.5.
TEST(PublicRows, LoadgenStatsByHand) {
  const RequestRecord a{.arrival_s = 0.5, .admitted_s = 0.5, .first_token_s = 1.0, .finish_s = 10.0, .output = 10};
  const RequestRecord b{.arrival_s = 2.0, .admitted_s = 2.0, .first_token_s = 2.5, .finish_s = 6.0, .output = 5};
  const ToolStats t = loadgen_stats({a, b}, 2.0);
  EXPECT_NEAR(t.duration_s, 6.0, 1e-12);
  EXPECT_NEAR(t.output_throughput, 5.0, 1e-12);
  EXPECT_NEAR(t.request_throughput, 4.0 / 6.0, 1e-12);
  EXPECT_NEAR(t.ttft.mean, 500.0, 1e-9);
  EXPECT_NEAR(t.tpot.mean, 937.5, 1e-9);
  EXPECT_NEAR(tool_stats({a, b}, 2.0).output_throughput, 30.0 / 9.5, 1e-12);
  EXPECT_EQ(loadgen_stats({}, 1.0).output_throughput, 0.0);
}

// The clamped lognormal mean by hand: sigma 1 and mean e^0.5 = 1.648721 (mu = 0, the median
// 1), clamped above at the median: E[X; X < 1] + 1 x P(X > 1) = m Phi(0 - 1) + 0.5 =
// 1.648721 x 0.158655 + 0.5 = 0.761579; no clamps: the mean itself.
TEST(PublicRows, ClampedLognormalMeanByHand) {
  EXPECT_NEAR(clamped_lognormal_mean(std::exp(0.5), 1.0, 0, 1.0), 0.761579, 1e-6);
  EXPECT_NEAR(clamped_lognormal_mean(3744, 1.1, 0, 0), 3744, 1e-9);
  // a floor raises it: clamped below at the median, 1 x P(X < 1) + E[X; X > 1] = 0.5 + m Phi(1) = 0.5 + 1.648721 x 0.841345
  EXPECT_NEAR(clamped_lognormal_mean(std::exp(0.5), 1.0, 1.0, 0), 0.5 + 1.648721 * 0.841345, 1e-5);
}

TEST(PublicRows, StatisticsByHand) {
  // errors 1, 2, 3, 4: the median sits halfway between ranks 1 and 2, 2.5; the p90 at rank
  // 0.9 x 3 = 2.7, 3 + 0.7 x (4 - 3) = 3.7
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_NEAR(quantile({4, 1, 3, 2}, 0.9), 3.7, 1e-12);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.9), 7.0);
  EXPECT_DOUBLE_EQ(abs_pct_error(110, 100), 10.0);
  EXPECT_DOUBLE_EQ(abs_pct_error(90, 100), 10.0);
}

TEST(MlperfRows, AnOfflineRowAndItsServerRowsShareTheirSubmissionsKey) {
  EXPECT_EQ(mlperf_system_key("github x @387c closed/NVIDIA/results/B200-SXM-180GBx8_TRT/llama2-70b-99/Server/performance/run_1/"
                              "mlperf_log_summary.txt ; config closed/NVIDIA/configs/B200-SXM-180GBx8/Server/llama2-70b.py"),
            "B200-SXM-180GBx8_TRT/llama2-70b-99");
  EXPECT_EQ(mlperf_system_key("NVIDIA/TensorRT-LLM docs/source/blogs/x.md"), "");
  EXPECT_EQ(mlperf_system_key("closed/NVIDIA/results/B200"), "");  // no benchmark after the system
  auto rows = load_public_rows(default_csv_path());
  ASSERT_TRUE(rows.ok());
  const PublicRow* offline = find(*rows, 300, RowMetric::kOfflineRun);
  const PublicRow* server = find(*rows, 301, RowMetric::kServeOutput);
  const PublicRow* gb200 = find(*rows, 311, RowMetric::kServeOutput);
  ASSERT_TRUE(offline && server && gb200);
  EXPECT_EQ(offline->system_key, "B200-SXM-180GBx8_TRT/llama2-70b-99");
  EXPECT_EQ(server->system_key, offline->system_key);
  EXPECT_EQ(gb200->system_key, "GB200-NVL72_GB200-186GB_aarch64x72_TRT/deepseek-r1");
}

}  // namespace
}  // namespace shardwise::bench
