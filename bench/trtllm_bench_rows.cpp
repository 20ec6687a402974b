#include "trtllm_bench_rows.hpp"

#include <array>

#include "row_text.hpp"

namespace shardwise::bench {

namespace {
// "Running the Benchmark", llm_options.yml of every model on the page (Llama 3.3, GPT-OSS,
// DeepSeek R1, Qwen3 MoE, Llama4 Maverick): cuda_graph_config enable_padding: true with these
// batch_sizes; the 0.19.0 page's text as stored lists the same (in the later cuda_graph_config
// keys: that text may postdate the tag; its tables are the ones the rows quote)
constexpr std::array<std::int64_t, 15> kGraphSizes = {1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192};
}  // namespace

bool is_perf_overview_row(const std::string& source, const std::string& locator) {
  return contains(source, "docs/source/developer-guide/perf-overview.md") && contains(locator, "03e27c7d5ff0");
}

std::int64_t perf_overview_requests(std::int64_t isl, std::int64_t osl) {
  if ((isl == 1024 || isl == 1000) && osl == isl) return 3000;
  if ((isl == 8192 && osl == 1024) || (isl == 1024 && osl == 8192)) return 1500;
  if ((isl == 32768 && osl == 1024) || (isl == 1024 && osl == 32768)) return 1000;
  return 0;
}

bool is_perf_overview_019_row(const std::string& source) {
  return contains(source, "docs/source/performance/perf-overview.md") && contains(source, "v0.19.0");
}

std::int64_t perf_overview_019_requests(std::int64_t isl, std::int64_t osl) {
  struct Pair {
    std::int64_t isl, osl, n;
  };
  static constexpr Pair kTable[] = {{128, 128, 30000},  {128, 2048, 3000},  {128, 4096, 1500}, {1000, 2000, 1500},
                                    {2048, 128, 3000},  {2048, 2048, 1500}, {5000, 500, 1500}, {1000, 1000, 3000},
                                    {500, 2000, 3000},  {20000, 2000, 1000},
                                    {1024, 2048, 1500}};  // the last: not in the request table, 1000/2000's
  for (const Pair& p : kTable) {
    if (p.isl == isl && p.osl == osl) return p.n;
  }
  return 0;
}

namespace {
// a burst of n requests through the serving simulation, decode-only iterations padded to the
// pages' CUDA-graph sizes
void as_run(PublicRow& r, std::int64_t n) {
  r.metric = RowMetric::kOfflineRun;
  r.workload.mode = Mode::kServe;
  r.workload.serve.arrivals = Arrivals{Arrivals::Kind::kBurst, 0, 0};
  r.workload.serve.requests = n;
  r.plan.batch = 0;
  r.engine.cuda_graph_batch_sizes.assign(kGraphSizes.begin(), kGraphSizes.end());
}
}  // namespace

bool perf_overview_019_run(PublicRow& r) {
  const std::int64_t n = perf_overview_019_requests(r.workload.isl, r.workload.osl);
  if (n <= 0) return false;
  as_run(r, n);
  return true;
}

bool perf_overview_run(PublicRow& r, const std::string& model) {
  const std::int64_t n = perf_overview_requests(r.workload.isl, r.workload.osl);
  if (n <= 0) return false;
  as_run(r, n);
  // DeepSeek R1's llm_options.yml: attention_dp_config {enable_balance: true,
  // batching_wait_iters: 0, timeout_iters: 60}
  if (contains(model, "DeepSeek")) {
    r.engine.adp_wait_iters = 0;
    r.engine.adp_timeout_iters = 60;
  }
  // GPT-OSS's llm_options.yml: moe_config {backend: CUTLASS}, "Hopper: use TRITON": on Hopper its
  // Triton backend, which neither the CUTLASS module floor nor its measured weight stream
  // describes (the GPU fit's expert efficiency prices it)
  if (contains(model, "GPT-OSS") && (r.gpu == "h100" || r.gpu == "h200")) set_trtllm_moe_backend(r.engine, TrtllmMoeBackend::kTriton);
  return true;
}

}  // namespace shardwise::bench
