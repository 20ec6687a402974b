// The public measurements of ../shared/calibration/public-measurements.csv as
// simulator cases: each row becomes (model, cluster, workload, plan, metric).
#pragma once
#include <string>
#include <vector>

#include "check/check.hpp"
#include "cost/simulator.hpp"

namespace shardwise::bench {

enum class RowMetric {
  kOfflineMaxThroughput,   // output tok/s per GPU of the offline stream at the engine's concurrency
  kOfflineRun,             // output tok/s per GPU of a whole offline run (MLPerf Offline: its samples queued at
                           // once, the dataset's lengths) through the serving simulation, to the last completion
  kStaticBatchThroughput,  // output tok/s per GPU of one static batch (min-latency rows: batch 1)
  kTtft,                   // first-token latency of one prompt, ms
  kDecodeThroughput,       // output tok/s per GPU of a decode-only (disaggregated) instance
  kPrefillThroughput,      // input tok/s per GPU of a prefill-only (disaggregated) instance
  // serving rows (closed loop, or MLPerf's Poisson Server), through the serving simulation (serve/): each published
  // metric is a row of its own; validation only, never fitted (bench/calibrate skips them)
  kServeOutput,            // output tok/s per GPU
  kServeTtft,              // mean TTFT, ms
  kServeTpot,              // mean TPOT, ms
  kServeTtftP50, kServeTtftP99, kServeTpotP50, kServeTpotP99,  // percentiles where published (MLPerf), ms
};

// The client that measured a serving row, so that the simulated run is summarised as it summarised its own.
enum class RowClient {
  kSteadyWindow,      // none stated: the serving simulation's steady window
  // vLLM's benchmark_serving (InferenceX, the vLLM posts): latencies over every request it sent, the first wave
  // and the drain included; output tokens over the first send to the last completion (check/'s tool_stats)
  kBenchmarkServing,
  // MLPerf loadgen (Server, Interactive): latencies over every query; "Completed tokens per second" the tokens
  // over the completion of the last-issued query (results.cc: final_query_all_samples_done_time, from the start)
  kLoadgen,
};

struct PublicRow {
  int id = 0;
  std::string label;   // "Llama-3.1-70B TP8 1000/1000 offline"
  std::string gpu;     // "h100", "h200", "b200", "gb200", "a100"
  std::string family;  // "dense" or "moe"
  std::string scenario;  // "offline", "static", "min-latency", "ttft", "decode-only", "prefill-only", "serve"
  std::string engine_name;  // "trtllm", "vllm", "sglang"
  std::int64_t batch_cap = 0;  // the concurrency the engine was given (0: unbounded): max batch is clamped to it
  RowMetric metric = RowMetric::kOfflineMaxThroughput;
  double measured = 0; // output tok/s per GPU, or TTFT in ms
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
  Plan plan;
  EngineTraits engine;  // from the engine and its version
  double serve_ttft_ms = 0, serve_tpot_ms = 0;  // a serving row's published means (0: not published)
  double serve_ttft_p50_ms = 0, serve_ttft_p99_ms = 0, serve_tpot_p50_ms = 0, serve_tpot_p99_ms = 0;  // MLPerf's percentiles
  std::string system_key;  // MLPerf: the submission's system and benchmark (mlperf_system_key), shared by its scenarios
  // whose statistics the row's figures are; kSteadyWindow: the simulation's steady window
  RowClient client = RowClient::kSteadyWindow;
};

// Reads and converts every row; a row the simulator cannot express is an error.
// Rows it cannot map (another model, GPU or scenario) are left out and listed in
// `skipped` with the reason, when given; only a file it cannot read is an error.
Expected<std::vector<PublicRow>> load_public_rows(const std::string& csv_path, std::vector<std::string>* skipped = nullptr);
// The first row id no fit sees (MLPerf Inference v5.1, rows 300-323): bench/calibrate fits
// below it only, bench/validate_public summarises the rows from it on as never fitted.
constexpr int kFirstHeldOutRow = 300;
// TensorRT-LLM's TRTLLM-Gen MoE backend (moe_config.backend: TRTLLM, where a row's config names
// it): the share of HBM at which it streams the expert weights, the slope of its module time
// over the touched experts' bytes in data/silicon/published/trtllm_moe_b200.csv (0.1889 us per
// MB, 5.29 TB/s of the B200's 8; tests/cost/trtllm_moe_test.cpp recomputes it), as the trtllm
// profile's moe_expert_stream is CUTLASS's, its default backend.
constexpr double kTrtllmGenExpertStream = 0.662;
// TensorRT-LLM's MoE backends as a row's config names them: CUTLASS (the trtllm profile's
// default: its module floor and measured stream), TRTLLM (TRTLLM-Gen: no floor,
// kTrtllmGenExpertStream), TRITON (neither: the GPU fit's expert efficiency prices it).
enum class TrtllmMoeBackend : std::uint8_t { kCutlass, kTrtllmGen, kTriton };
// Sets `e` (the trtllm profile as loaded) to run `b`.
void set_trtllm_moe_backend(EngineTraits& e, TrtllmMoeBackend b);
// The last serving run predict() summarised, so that a row's other metric rows (each published
// metric is a PublicRow of its own over the same simulated run) reuse it instead of simulating
// it again: taken when the row id, workload, plan, engine, client and parameters all match.
struct ServeMemo {
  int id = -1;
  Workload workload;
  Plan plan;
  EngineTraits engine;
  RowClient client = RowClient::kSteadyWindow;
  CostParams params;
  ToolStats stats;
};
// The prediction for a row under the given parameters (same unit as measured); `memo`, when
// given, is read and refreshed for the rows a client's summary of a serving run predicts.
double predict(const PublicRow& r, const CostParams& p, ServeMemo* memo = nullptr);
// MLPerf loadgen's figures of a simulated run (one instance's records, counted `replicas` times):
// tool_stats' latencies over every query, and its throughput as loadgen's "Completed tokens per
// second": the output tokens over the completion of the last-issued query (the record of the
// latest arrival), from the start, time 0 (loadgen's results.cc, final_query_all_samples_done_time)
ToolStats loadgen_stats(const std::vector<RequestRecord>& recs, double replicas);
// A serving or MLPerf Offline row's simulation, its internals in a few lines (validate_public
// --detail): offered rate and capacity, mean running and in system, where the mean request's
// time goes, the caps that blocked admission; "" for a row the serving simulation does not run.
std::string serving_detail(const PublicRow& r, const CostParams& p);
double abs_pct_error(double predicted, double measured);
// The metrics that run the request-level serving simulation.
bool is_serve_metric(RowMetric m);
// The q-quantile of the errors, interpolated between ranks (0 when empty): 0.5 the median.
double quantile(std::vector<double> e, double q);
std::string default_csv_path();
// data/validation/: the held-out rows' files, in the shared file's columns (never fitted)
std::string held_out_dir();

}  // namespace shardwise::bench
